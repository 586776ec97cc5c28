// The webgpu backend's training kernels (src/autograd/kernels/webgpu.ts, WGSL in
// src/backends/webgpu/train/) against the ts reference on random inputs: the GEMMs of a linear
// layer (edge tiles), attention forward and backward (GQA, window, soft-cap, bidirectional),
// RMSNorm, RoPE (both styles, partial rotation), gated activations, cross-entropy (ignored
// rows), the sums and AdamW; and the same bits on every run. Skips when there is no adapter.
// Tolerances: test/helpers/tolerances.ts (TRAIN_KERNEL_TOLERANCE.webgpu).

import { test } from "node:test";
import assert from "node:assert/strict";
import { trainKernelsFor, tsTrainKernels, type AttentionShape, type TrainKernels } from "../src/autograd/kernels/index.js";
import { Rng } from "../src/data/rng.js";
import { TRAIN_KERNEL_TOLERANCE } from "./helpers/tolerances.js";
import { webgpuTrainSkip } from "./helpers/webgpu.js";

const skip = webgpuTrainSkip();
const K = (): TrainKernels => trainKernelsFor("webgpu");
const TOL = TRAIN_KERNEL_TOLERANCE.webgpu;
const rng = new Rng(98);
const randn = (n: number) => Float32Array.from({ length: n }, () => rng.normal());

function close(name: string, got: ArrayLike<number>, want: ArrayLike<number>, tol: number = TOL): void {
  assert.equal(got.length, want.length, `${name}: length`);
  let scale = 0, worst = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  assert.ok(worst <= tol * Math.max(scale, 1e-3), `${name}: max difference ${worst.toExponential(2)} (scale ${scale.toExponential(2)})`);
}

test("webgpu linear forward and backward equal the ts reference (edge tiles)", { skip }, () => {
  for (const [N, nIn, nOut] of [[1, 1, 1], [3, 7, 5], [37, 300, 41], [20, 64, 9]]) {
    const x = randn(N * nIn), w = randn(nOut * nIn), dy = randn(N * nOut);
    close(`y ${N}×${nIn}→${nOut}`, K().linear(x, w, N, nIn, nOut), tsTrainKernels.linear(x, w, N, nIn, nOut));
    const dx0 = randn(N * nIn), dw0 = randn(nOut * nIn);
    const [dxG, dwG, dxT, dwT] = [dx0.slice(), dw0.slice(), dx0.slice(), dw0.slice()];
    K().linearBackward(dy, x, w, N, nIn, nOut, dxG, dwG);
    tsTrainKernels.linearBackward(dy, x, w, N, nIn, nOut, dxT, dwT);
    close(`dx ${N}×${nIn}→${nOut}`, dxG, dxT);
    close(`dW ${N}×${nIn}→${nOut}`, dwG, dwT);
    const dwOnly = dw0.slice();
    K().linearBackward(dy, x, w, N, nIn, nOut, null, dwOnly);
    assert.deepEqual(dwOnly, dwG, "dW without dx");
  }
});

const CASES: [string, AttentionShape, { scale: number; softcap: number; window: number; causal: boolean }][] = [
  ["causal, grouped KV heads, two sequences", { batch: 2, seq: 19, heads: 4, kvHeads: 2, headDim: 8 }, { scale: 0.35, softcap: 0, window: 0, causal: true }],
  ["soft-capped, sliding window", { batch: 1, seq: 23, heads: 2, kvHeads: 1, headDim: 16 }, { scale: 0.25, softcap: 5, window: 6, causal: true }],
  ["bidirectional (ViT)", { batch: 3, seq: 17, heads: 3, kvHeads: 3, headDim: 12 }, { scale: 0.29, softcap: 0, window: 0, causal: false }],
];

for (const [name, s, opts] of CASES) {
  test(`webgpu attention forward and backward equal the ts reference: ${name}`, { skip }, () => {
    const nq = s.batch * s.seq * s.heads * s.headDim, nk = s.batch * s.seq * s.kvHeads * s.headDim;
    const q = randn(nq), k = randn(nk), v = randn(nk), dy = randn(nq);
    const g = K().attention(q, k, v, s, opts), r = tsTrainKernels.attention(q, k, v, s, opts);
    close("out", g.out, r.out);
    close("probs", g.probs, r.probs);
    const grads = () => [randn(nq), randn(nk), randn(nk)] as const;
    const gg = grads(), gr = [gg[0].slice(), gg[1].slice(), gg[2].slice()] as const;
    K().attentionBackward(dy, q, k, v, g.probs, s, opts, ...gg);
    tsTrainKernels.attentionBackward(dy, q, k, v, r.probs, s, opts, ...gr);
    ["dq", "dk", "dv"].forEach((n, i) => close(n, gg[i], gr[i]));
  });
}

test("webgpu RMSNorm forward and backward equal the ts reference", { skip }, () => {
  for (const [rows, n] of [[1, 1], [5, 7], [37, 300]]) {
    const x = randn(rows * n), g = randn(n), dy = randn(rows * n);
    close(`y ${rows}×${n}`, K().rmsNorm(x, g, rows, n, 1e-5), tsTrainKernels.rmsNorm(x, g, rows, n, 1e-5));
    const dx0 = randn(rows * n), dg0 = randn(n);
    const [dxG, dgG, dxT, dgT] = [dx0.slice(), dg0.slice(), dx0.slice(), dg0.slice()];
    K().rmsNormBackward(dy, x, g, rows, n, 1e-5, dxG, dgG);
    tsTrainKernels.rmsNormBackward(dy, x, g, rows, n, 1e-5, dxT, dgT);
    close(`dx ${rows}×${n}`, dxG, dxT);
    close(`dg ${rows}×${n}`, dgG, dgT);
  }
});

test("webgpu RoPE forward and backward equal the ts reference (both styles, partial rotation)", { skip }, () => {
  for (const style of ["neox", "interleaved"] as const) {
    for (const [N, heads, headDim, dims] of [[3, 1, 4, 4], [37, 2, 12, 8]]) {
      const s = { heads, headDim, dims, style };
      const x = randn(N * heads * headDim), dy = randn(x.length);
      const positions = Int32Array.from({ length: N }, (_, t) => (t * 7) % 29);
      const invFreq = Float32Array.from({ length: dims / 2 }, (_, i) => Math.pow(10000, (-2 * i) / dims));
      const yT = tsTrainKernels.rope(x, positions, invFreq, s);
      close(`y ${style} ${N}×${heads}×${headDim}/${dims}`, K().rope(x, positions, invFreq, s), yT);
      const dx0 = randn(x.length), di0 = randn(dims / 2);
      const [dxG, diG, dxT, diT] = [dx0.slice(), di0.slice(), dx0.slice(), di0.slice()];
      K().ropeBackward(dy, yT, positions, invFreq, s, dxG, diG);
      tsTrainKernels.ropeBackward(dy, yT, positions, invFreq, s, dxT, diT);
      close(`dx ${style}`, dxG, dxT);
      close(`dinvFreq ${style}`, diG, diT);
    }
  }
});

test("webgpu gated activations (SwiGLU, GeGLU) forward and backward equal the ts reference", { skip }, () => {
  for (const act of ["silu", "gelu"] as const) {
    for (const n of [1, 13, 5003]) {
      const gate = randn(n).map((v) => 3 * v), up = randn(n), dy = randn(n);
      close(`y ${act} ${n}`, K().gated(gate, up, act), tsTrainKernels.gated(gate, up, act));
      const dg0 = randn(n), du0 = randn(n);
      const [dgG, duG, dgT, duT] = [dg0.slice(), du0.slice(), dg0.slice(), du0.slice()];
      K().gatedBackward(dy, gate, up, act, dgG, duG);
      tsTrainKernels.gatedBackward(dy, gate, up, act, dgT, duT);
      close(`dgate ${act} ${n}`, dgG, dgT);
      close(`dup ${act} ${n}`, duG, duT);
    }
  }
});

test("webgpu cross-entropy and its backward equal the ts reference (ignored rows)", { skip }, () => {
  for (const [N, V] of [[1, 3], [37, 259], [20, 1001]]) {
    const z = randn(N * V).map((v) => 4 * v);
    const targets = Int32Array.from({ length: N }, (_, t) => (t % 5 === 3 ? -100 : (t * 31) % V));
    const g = K().crossEntropy(z, targets, V, -100), r = tsTrainKernels.crossEntropy(z, targets, V, -100);
    assert.ok(Math.abs(g.total - r.total) <= TOL * Math.max(1, Math.abs(r.total)), `total ${g.total} vs ${r.total}`);
    close(`lse ${N}×${V}`, g.lse, r.lse);
    const dz0 = randn(N * V), dzG = dz0.slice(), dzT = dz0.slice();
    K().crossEntropyBackward(z, targets, g.lse, V, -100, 0.37, dzG);
    tsTrainKernels.crossEntropyBackward(z, targets, r.lse, V, -100, 0.37, dzT);
    close(`dz ${N}×${V}`, dzG, dzT);
  }
});

test("webgpu sums, scaling, squared norms and AdamW equal the ts reference", { skip }, () => {
  for (const n of [1, 9, 7001]) {
    const a = randn(n), b = randn(n);
    assert.deepEqual(K().add(a, b), tsTrainKernels.add(a, b), `add ${n}`);   // one float32 add: exact
    const [accG, accT] = [a.slice(), a.slice()];
    K().accumulate(accG, b); tsTrainKernels.accumulate(accT, b);
    assert.deepEqual(accG, accT, `accumulate ${n}`);
    const [sG, sT] = [a.slice(), a.slice()];
    K().scale(sG, 0.3); tsTrainKernels.scale(sT, 0.3);
    close(`scale ${n}`, sG, sT, 2.5e-7);    // s is rounded to float32 on the device: ≤ 2 ulps
    const ssG = K().sumOfSquares(a), ssT = tsTrainKernels.sumOfSquares(a);
    assert.ok(Math.abs(ssG - ssT) <= TOL * ssT, `sum of squares ${n}: ${ssG} vs ${ssT}`);
    const theta = randn(n), m = new Float32Array(n), v = new Float32Array(n);
    const [tG, mG, vG, tT, mT, vT] = [theta.slice(), m.slice(), v.slice(), theta.slice(), m.slice(), v.slice()];
    for (let step = 1; step <= 3; step++) {
      const g = randn(n).map((x) => x * 10 ** (step - 2));
      const h = { b1: 0.9, b2: 0.95, eps: 1e-8, decay: 1 - 1e-3 * 0.1, stepSize: 1e-3 / (1 - 0.9 ** step), bc2: Math.sqrt(1 - 0.95 ** step), gradScale: 0.8 };
      K().adamw(tG, g, mG, vG, h);
      tsTrainKernels.adamw(tT, g, mT, vT, h);
    }
    close(`adamw θ ${n}`, tG, tT); close(`adamw m ${n}`, mG, mT); close(`adamw v ${n}`, vG, vT);
  }
});

test("webgpu training kernels give the same bits on every run", { skip }, () => {
  const s: AttentionShape = { batch: 2, seq: 24, heads: 4, kvHeads: 2, headDim: 16 }, o = { scale: 0.25, softcap: 3, window: 9, causal: true };
  const x = randn(60 * 70), w = randn(50 * 70), dy = randn(60 * 50);
  const q = randn(2 * 24 * 64), kk = randn(2 * 24 * 32), v = randn(2 * 24 * 32), dq = randn(q.length);
  const z = randn(30 * 300), tg = Int32Array.from({ length: 30 }, (_, t) => (t * 13) % 300);
  const big = randn(50_000);
  const run = () => {
    const dx = new Float32Array(x.length), dw = new Float32Array(w.length);
    K().linearBackward(dy, x, w, 60, 70, 50, dx, dw);
    const a = K().attention(q, kk, v, s, o);
    const g = [new Float32Array(q.length), new Float32Array(kk.length), new Float32Array(v.length)] as const;
    K().attentionBackward(dq, q, kk, v, a.probs, s, o, ...g);
    const ce = K().crossEntropy(z, tg, 300, -100), dz = new Float32Array(z.length);
    K().crossEntropyBackward(z, tg, ce.lse, 300, -100, 0.01, dz);
    return [K().linear(x, w, 60, 70, 50), dx, dw, a.out, ...g, ce.lse, dz, Float64Array.of(ce.total, K().sumOfSquares(big))];
  };
  const one = run(), two = run();
  one.forEach((a, i) => assert.deepEqual(Buffer.from(a.buffer), Buffer.from(two[i].buffer), `output ${i} differs between runs`));
});
