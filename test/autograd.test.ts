// Every differentiable op's backward against central finite differences of its forward, on
// tiny random inputs; and the optimizer pieces against hand computations.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Tape } from "../src/autograd/tape.js";
import { gradChecker } from "./helpers/gradCheck.js";
import {
  add, attention, combineExperts, crossEntropy, embedding, gatherRows, geglu, gelu, IGNORE, layerNorm, linear,
  reshape, rmsNorm, rope, ropeFrequencies, scale, sliceCols, sliceRows, softcap, softmax, swiglu,
} from "../src/autograd/ops/index.js";
import { Rng } from "../src/data/rng.js";
import { AdamW } from "../src/optim/adamw.js";
import { clipGradNorm, globalNorm } from "../src/optim/clip.js";
import { learningRate } from "../src/optim/schedule.js";

const rng = new Rng(1234);
const { gradCheck, randn, t } = gradChecker(rng);

test("linear: x, W and bias", () => gradCheck("linear", [t([3, 8]), t([5, 8]), t([5])], ([x, w, b]) => linear(x, w, b)));
test("embedding: scatter-add into the table, repeated ids", () => {
  const ids = Int32Array.from([2, 0, 2, 3]);
  gradCheck("embedding", [t([4, 6])], ([e]) => embedding(e, ids));
});
test("add, scale, softcap", () => {
  gradCheck("add", [t([4, 4]), t([4, 4])], ([a, b]) => add(a, b));
  gradCheck("scale", [t([4, 4])], ([a]) => scale(a, 2.5));
  gradCheck("softcap", [t([4, 4], 3)], ([a]) => softcap(a, 2));
});
test("reshape, sliceCols, sliceRows, gatherRows", () => {
  gradCheck("reshape", [t([2, 6])], ([a]) => reshape(a, [4, 3]));
  gradCheck("sliceCols", [t([3, 6])], ([a]) => sliceCols(a, 1, 4));
  gradCheck("sliceRows", [t([5, 3])], ([a]) => sliceRows(a, 1, 4));
  gradCheck("gatherRows", [t([5, 3])], ([a]) => gatherRows(a, [4, 1, 4]));
});
test("rmsNorm: x and gain", () => gradCheck("rmsNorm", [t([3, 8]), t([8])], ([x, g]) => rmsNorm(x, g, 1e-5)));
test("layerNorm: x, gain and bias", () => gradCheck("layerNorm", [t([3, 8]), t([8]), t([8])], ([x, g, b]) => layerNorm(x, g, b, 1e-5)));
for (const style of ["interleaved", "neox"] as const) {
  test(`rope (${style}, partial dims): x and the frequency factors`, () => {
    const positions = Int32Array.from([0, 1, 2, 5]);
    const factors = { data: Float32Array.from([1, 1.5, 2, 4]), shape: [4] };
    gradCheck(`rope ${style}`, [t([4, 2, 10]), factors], ([x, f]) => {
      const inv = ropeFrequencies(x.tape, { base: 100, dims: 8, style, freqScale: 0.5 }, f);
      return rope(x, positions, inv, 8, style);
    }, { h: 1e-3 });
  });
}
test("attention: causal, grouped KV heads, two sequences", () => {
  const shape = { batch: 2, seq: 4, heads: 4, kvHeads: 2, headDim: 4 };
  gradCheck("attention", [t([8, 4, 4]), t([8, 2, 4]), t([8, 2, 4])], ([q, k, v]) => attention(q, k, v, shape, { scale: 0.5, softcap: 0, window: 0, causal: true }));
});
test("attention: soft-capped logits and a sliding window", () => {
  const shape = { batch: 1, seq: 6, heads: 2, kvHeads: 1, headDim: 4 };
  gradCheck("attention softcap", [t([6, 2, 4], 2), t([6, 1, 4], 2), t([6, 1, 4])], ([q, k, v]) => attention(q, k, v, shape, { scale: 0.5, softcap: 1.5, window: 3, causal: true }));
});
test("swiglu, geglu, gelu", () => {
  gradCheck("swiglu", [t([3, 5], 2), t([3, 5])], ([g, u]) => swiglu(g, u));
  gradCheck("geglu", [t([3, 5], 2), t([3, 5])], ([g, u]) => geglu(g, u));
  gradCheck("gelu", [t([3, 5], 2)], ([x]) => gelu(x));
});
test("softmax", () => gradCheck("softmax", [t([3, 6], 2)], ([x]) => softmax(x)));
test("crossEntropy: mean over targets that are not ignored", () => {
  const targets = Int32Array.from([1, IGNORE, 4, 0]);
  gradCheck("crossEntropy", [t([4, 6], 2)], ([z]) => crossEntropy(z, targets));
  const tape = new Tape();
  const z = tape.param(new Float32Array(4 * 6), [4, 6]);
  assert.ok(Math.abs(crossEntropy(z, targets).data[0] - Math.log(6)) < 1e-6, "uniform logits give log(vocab)");
});
test("mixture of experts: gradients through the routing probabilities and the experts' outputs", () => {
  gradCheck("combineExperts", [t([4, 3]), t([2, 5]), t([3, 5])], ([logits, o0, o2]) => {
    const probs = softmax(logits);
    return combineExperts(probs, [{ expert: 0, tokens: [1, 3], out: o0 }, { expert: 2, tokens: [0, 1, 2], out: o2 }], 4, 5);
  });
});
test("a small composed network (norm → linear → swiglu → residual → logits → loss)", () => {
  const targets = Int32Array.from([2, 0, 1]);
  gradCheck("composed", [t([3, 8]), t([8]), t([6, 8]), t([6, 8]), t([8, 6]), t([4, 8])], ([x, g, wg, wu, wd, wo]) => {
    const h = rmsNorm(x, g, 1e-6);
    const y = add(x, linear(swiglu(linear(h, wg), linear(h, wu)), wd));
    return crossEntropy(linear(y, wo), targets);
  });
});

test("released gradient buffers come back as zeros: the next tape gets the same gradients", () => {
  const [x, g, wg, wu, wd, wo] = [randn(3 * 8), randn(8), randn(6 * 8), randn(6 * 8), randn(8 * 6), randn(4 * 8)];
  const targets = Int32Array.from([2, 0, 1]);
  const run = () => {
    const tape = new Tape();
    const P = [tape.param(g, [8]), tape.param(wg, [6, 8]), tape.param(wu, [6, 8]), tape.param(wd, [8, 6]), tape.param(wo, [4, 8])];
    const h = rmsNorm(reshape(tape.param(x, [3, 8]), [3, 8]), P[0], 1e-6);
    const y = add(h, linear(swiglu(linear(h, P[1]), linear(h, P[2])), P[3]));
    tape.backward(crossEntropy(linear(y, P[4]), targets));
    const grads = P.map((v) => v.grad!);
    tape.release(); // the op outputs' gradients go back, full of this step's values
    return grads;
  };
  const first = run(), second = run();
  assert.deepEqual(second, first);
  assert.ok(first.every((a, i) => a !== second[i]), "the leaves' gradients are never handed on");
});

test("AdamW: one step equals the torch.optim.AdamW formula; no decay on 1-D tensors", () => {
  const params = new Map([["w", Float32Array.from([1, -2])], ["b", Float32Array.from([0.5])]]);
  const dims = new Map([["w", [2, 1]], ["b", [1]]]);
  const grads = new Map([["w", Float32Array.from([0.1, -0.3])], ["b", Float32Array.from([2])]]);
  const opt = new AdamW({ lr: 0.01, betas: [0.9, 0.95], eps: 1e-8, weightDecay: 0.1 });
  opt.step(params, dims, grads);
  // Step 1: m̂ = g, v̂ = g², so θ ← θ(1 − lr·λ) − lr·g/(|g| + ε).
  const expect = (th: number, g: number, decay: boolean) => th * (decay ? 1 - 0.001 : 1) - (0.01 * g) / (Math.abs(g) + 1e-8);
  assert.ok(Math.abs(params.get("w")![0] - expect(1, 0.1, true)) < 1e-6);
  assert.ok(Math.abs(params.get("w")![1] - expect(-2, -0.3, true)) < 1e-6);
  assert.ok(Math.abs(params.get("b")![0] - expect(0.5, 2, false)) < 1e-6);
  assert.equal(opt.state.step, 1);
});
test("schedules: constant, linear warmup then cosine decay", () => {
  const o = { kind: "cosine" as const, lr: 1, steps: 10, warmup: 2, minRatio: 0 };
  assert.equal(learningRate(0, o), 0.5);
  assert.equal(learningRate(1, o), 1);
  assert.ok(Math.abs(learningRate(2, o) - 1) < 1e-12);
  assert.ok(Math.abs(learningRate(6, o) - 0.5) < 1e-12);
  assert.ok(Math.abs(learningRate(10, o)) < 1e-12);
  assert.equal(learningRate(7, { ...o, kind: "constant" }), 1);
});
test("global-norm clipping", () => {
  const grads = new Map([["a", Float32Array.from([3, 0])], ["b", Float32Array.from([4])]]);
  assert.equal(clipGradNorm(grads, 0), 5, "0 is off");
  assert.equal(grads.get("a")![0], 3);
  assert.equal(clipGradNorm(grads, 1), 5);
  assert.ok(Math.abs(globalNorm(grads.values()) - 1) < 1e-5);
});
