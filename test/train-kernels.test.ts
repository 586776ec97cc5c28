// The cpu backend's training kernels (native GEMM, attention forward and backward, the
// O(tokens · d) ops and the optimizer's sweeps) against the ts reference, on shapes that cover
// the GEMM's edge tiles, attention's query blocks and every attention option, vector tails and
// several work chunks; and the same bits for 1 and 2 threads. Float32 FMA sums vs float64 sums:
// agreement to 1e-5 relative to each output's scale is what 32-bit rounding over these lengths
// (≤ 600 terms) allows.

import { test } from "node:test";
import assert from "node:assert/strict";
import { cpuBackend } from "../src/backends/index.js";
import { trainKernelsFor, tsTrainKernels, type AttentionShape } from "../src/autograd/kernels/index.js";
import { Rng } from "../src/data/rng.js";

const cpu = cpuBackend();
const skip = "error" in cpu ? `no native backend (${cpu.error})` : false;
const rng = new Rng(99);
const randn = (n: number) => Float32Array.from({ length: n }, () => rng.normal());

function close(name: string, got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-5): void {
  assert.equal(got.length, want.length, `${name}: length`);
  let scale = 0, worst = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  assert.ok(worst <= tol * Math.max(scale, 1e-3), `${name}: max difference ${worst.toExponential(2)} (scale ${scale.toExponential(2)})`);
}

test("cpu linear forward and backward equal the ts reference (edge tiles, K past one block)", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const [N, nIn, nOut] of [[1, 1, 1], [3, 7, 5], [37, 300, 41], [100, 513, 97], [260, 64, 260]]) {
    const x = randn(N * nIn), w = randn(nOut * nIn), dy = randn(N * nOut);
    close(`y ${N}×${nIn}→${nOut}`, K.linear(x, w, N, nIn, nOut), tsTrainKernels.linear(x, w, N, nIn, nOut));
    const dx0 = randn(N * nIn), dw0 = randn(nOut * nIn);
    const [dxC, dwC, dxT, dwT] = [dx0.slice(), dw0.slice(), dx0.slice(), dw0.slice()];
    K.linearBackward(dy, x, w, N, nIn, nOut, dxC, dwC);
    tsTrainKernels.linearBackward(dy, x, w, N, nIn, nOut, dxT, dwT);
    close(`dx ${N}×${nIn}→${nOut}`, dxC, dxT);
    close(`dW ${N}×${nIn}→${nOut}`, dwC, dwT);
  }
});

const CASES: [string, AttentionShape, { scale: number; softcap: number; window: number; causal: boolean }][] = [
  ["causal, grouped KV heads, two sequences", { batch: 2, seq: 19, heads: 4, kvHeads: 2, headDim: 8 }, { scale: 0.35, softcap: 0, window: 0, causal: true }],
  ["soft-capped, sliding window", { batch: 1, seq: 23, heads: 2, kvHeads: 1, headDim: 16 }, { scale: 0.25, softcap: 5, window: 6, causal: true }],
  ["bidirectional (ViT)", { batch: 3, seq: 17, heads: 3, kvHeads: 3, headDim: 12 }, { scale: 0.29, softcap: 0, window: 0, causal: false }],
  // Past one block of 64 queries: the causal products skip the blocks above the diagonal.
  ["causal, three query blocks", { batch: 2, seq: 150, heads: 2, kvHeads: 1, headDim: 8 }, { scale: 0.3, softcap: 0, window: 0, causal: true }],
  ["soft-capped, window across blocks", { batch: 1, seq: 140, heads: 2, kvHeads: 2, headDim: 8 }, { scale: 0.3, softcap: 4, window: 70, causal: true }],
  ["bidirectional, two blocks", { batch: 1, seq: 100, heads: 2, kvHeads: 1, headDim: 12 }, { scale: 0.3, softcap: 0, window: 0, causal: false }],
];

for (const [name, s, opts] of CASES) {
  test(`cpu attention forward and backward equal the ts reference: ${name}`, { skip }, () => {
    const K = trainKernelsFor("cpu");
    const nq = s.batch * s.seq * s.heads * s.headDim, nk = s.batch * s.seq * s.kvHeads * s.headDim;
    const q = randn(nq), k = randn(nk), v = randn(nk), dy = randn(nq);
    const c = K.attention(q, k, v, s, opts), r = tsTrainKernels.attention(q, k, v, s, opts);
    close("out", c.out, r.out);
    const grads = () => [new Float32Array(nq), new Float32Array(nk), new Float32Array(nk)] as const;
    const gc = grads(), gr = grads();
    K.attentionBackward(dy, q, k, v, c.probs, s, opts, ...gc);
    tsTrainKernels.attentionBackward(dy, q, k, v, r.probs, s, opts, ...gr);
    ["dq", "dk", "dv"].forEach((n, i) => close(n, gc[i], gr[i]));
  });
}

test("cpu RMSNorm forward and backward equal the ts reference", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const [rows, n] of [[1, 1], [5, 7], [37, 300], [70, 64]]) {
    const x = randn(rows * n), g = randn(n), dy = randn(rows * n);
    close(`y ${rows}×${n}`, K.rmsNorm(x, g, rows, n, 1e-5), tsTrainKernels.rmsNorm(x, g, rows, n, 1e-5));
    const dx0 = randn(rows * n), dg0 = randn(n);
    const [dxC, dgC, dxT, dgT] = [dx0.slice(), dg0.slice(), dx0.slice(), dg0.slice()];
    K.rmsNormBackward(dy, x, g, rows, n, 1e-5, dxC, dgC);
    tsTrainKernels.rmsNormBackward(dy, x, g, rows, n, 1e-5, dxT, dgT);
    close(`dx ${rows}×${n}`, dxC, dxT);
    close(`dg ${rows}×${n}`, dgC, dgT);
    const dxOnly = dx0.slice();
    K.rmsNormBackward(dy, x, g, rows, n, 1e-5, dxOnly, null);
    assert.deepEqual(dxOnly, dxC, "dx without dg");
  }
});

test("cpu RoPE forward and backward equal the ts reference (both styles, partial rotation)", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const style of ["neox", "interleaved"] as const) {
    for (const [N, heads, headDim, dims] of [[3, 1, 4, 4], [40, 3, 16, 16], [37, 2, 12, 8]]) {
      const s = { heads, headDim, dims, style };
      const x = randn(N * heads * headDim), dy = randn(x.length);
      const positions = Int32Array.from({ length: N }, (_, t) => (t * 7) % 29);
      const invFreq = Float32Array.from({ length: dims / 2 }, (_, i) => Math.pow(10000, (-2 * i) / dims));
      const yC = K.rope(x, positions, invFreq, s), yT = tsTrainKernels.rope(x, positions, invFreq, s);
      close(`y ${style} ${N}×${heads}×${headDim}/${dims}`, yC, yT);
      const dx0 = randn(x.length), di0 = randn(dims / 2);
      const [dxC, diC, dxT, diT] = [dx0.slice(), di0.slice(), dx0.slice(), di0.slice()];
      K.ropeBackward(dy, yT, positions, invFreq, s, dxC, diC);
      tsTrainKernels.ropeBackward(dy, yT, positions, invFreq, s, dxT, diT);
      close(`dx ${style}`, dxC, dxT);
      close(`dinvFreq ${style}`, diC, diT);
    }
  }
});

test("cpu gated activations (SwiGLU, GeGLU) forward and backward equal the ts reference", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const act of ["silu", "gelu"] as const) {
    for (const n of [1, 13, 40_003]) { // vector tails; several chunks of 16384
      const gate = randn(n).map((v) => 3 * v), up = randn(n), dy = randn(n);
      close(`y ${act} ${n}`, K.gated(gate, up, act), tsTrainKernels.gated(gate, up, act));
      const dg0 = randn(n), du0 = randn(n);
      const [dgC, duC, dgT, duT] = [dg0.slice(), du0.slice(), dg0.slice(), du0.slice()];
      K.gatedBackward(dy, gate, up, act, dgC, duC);
      tsTrainKernels.gatedBackward(dy, gate, up, act, dgT, duT);
      close(`dgate ${act} ${n}`, dgC, dgT);
      close(`dup ${act} ${n}`, duC, duT);
    }
  }
});

test("cpu cross-entropy and its backward equal the ts reference (ignored rows, vector tails)", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const [N, V] of [[1, 3], [37, 259], [50, 1001]]) {
    const z = randn(N * V).map((v) => 4 * v);
    const targets = Int32Array.from({ length: N }, (_, t) => (t % 5 === 3 ? -100 : (t * 31) % V));
    const c = K.crossEntropy(z, targets, V, -100), r = tsTrainKernels.crossEntropy(z, targets, V, -100);
    assert.ok(Math.abs(c.total - r.total) <= 1e-5 * Math.max(1, Math.abs(r.total)), `total ${c.total} vs ${r.total}`);
    close(`lse ${N}×${V}`, c.lse, r.lse);
    const dz0 = randn(N * V), dzC = dz0.slice(), dzT = dz0.slice();
    K.crossEntropyBackward(z, targets, c.lse, V, -100, 0.37, dzC);
    tsTrainKernels.crossEntropyBackward(z, targets, r.lse, V, -100, 0.37, dzT);
    close(`dz ${N}×${V}`, dzC, dzT);
  }
});

test("cpu sums, scaling and squared norms equal the ts reference", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const n of [1, 9, 70_001]) {
    const a = randn(n), b = randn(n);
    assert.deepEqual(K.add(a, b), tsTrainKernels.add(a, b), `add ${n}`);
    const [accC, accT] = [a.slice(), a.slice()];
    K.accumulate(accC, b); tsTrainKernels.accumulate(accT, b);
    assert.deepEqual(accC, accT, `accumulate ${n}`);
    const [sC, sT] = [a.slice(), a.slice()];
    K.scale(sC, 0.3); tsTrainKernels.scale(sT, 0.3);
    assert.deepEqual(sC, sT, `scale ${n}`);
    const ssC = K.sumOfSquares(a), ssT = tsTrainKernels.sumOfSquares(a);
    assert.ok(Math.abs(ssC - ssT) <= 1e-12 * ssT, `sum of squares ${n}: ${ssC} vs ${ssT}`);
  }
});

test("cpu AdamW gives the reference's bits", { skip }, () => {
  const K = trainKernelsFor("cpu");
  for (const n of [1, 7, 70_001]) {
    const theta = randn(n), m = new Float32Array(n), v = new Float32Array(n);
    const [tC, mC, vC, tT, mT, vT] = [theta.slice(), m.slice(), v.slice(), theta.slice(), m.slice(), v.slice()];
    for (let step = 1; step <= 3; step++) {
      const g = randn(n).map((x) => x * 10 ** (step - 2));
      const h = { b1: 0.9, b2: 0.95, eps: 1e-8, decay: 1 - 1e-3 * 0.1, stepSize: 1e-3 / (1 - 0.9 ** step), bc2: Math.sqrt(1 - 0.95 ** step) };
      K.adamw(tC, g, mC, vC, h);
      tsTrainKernels.adamw(tT, g, mT, vT, h);
    }
    assert.deepEqual([tC, mC, vC], [tT, mT, vT], `adamw ${n}`);
  }
});

test("AdamW with a gradient scale is clipping then AdamW, to the bit, on ts and cpu", () => {
  const backends = "error" in cpu ? [tsTrainKernels] : [tsTrainKernels, trainKernelsFor("cpu")];
  for (const K of backends) for (const n of [1, 7, 70_001]) {
    const theta = randn(n), g = randn(n);
    const [tA, mA, vA, tB, mB, vB] = [theta.slice(), new Float32Array(n), new Float32Array(n), theta.slice(), new Float32Array(n), new Float32Array(n)];
    const h = { b1: 0.9, b2: 0.95, eps: 1e-8, decay: 1 - 1e-4, stepSize: 1e-3 / 0.1, bc2: Math.sqrt(1 - 0.95) };
    const s = 0.3127;
    const clipped = g.slice();
    K.scale(clipped, s);
    K.adamw(tA, clipped, mA, vA, h);
    const before = g.slice();
    K.adamw(tB, g, mB, vB, { ...h, gradScale: s });
    assert.deepEqual([tB, mB, vB], [tA, mA, vA], `${K.device} adamw ${n}`);
    assert.deepEqual(g, before, "the gradient is not written");
  }
});

test("cpu training kernels give the same bits for 1 and 2 threads", { skip }, () => {
  if ("error" in cpu) return;
  const K = trainKernelsFor("cpu");
  const x = randn(300 * 200), w = randn(250 * 200), dy = randn(300 * 250);
  const s: AttentionShape = { batch: 2, seq: 40, heads: 4, kvHeads: 2, headDim: 16 }, o = { scale: 0.25, softcap: 0, window: 0, causal: true };
  const q = randn(2 * 40 * 64), kk = randn(2 * 40 * 32), v = randn(2 * 40 * 32), dq = randn(2 * 40 * 64);
  const ls: AttentionShape = { batch: 2, seq: 150, heads: 2, kvHeads: 1, headDim: 16 }; // several query blocks
  const lq = randn(2 * 150 * 32), lk = randn(2 * 150 * 16), lv = randn(2 * 150 * 16), ldo = randn(lq.length);
  // Sizes past the native ops' single-chunk threshold, so that 2 threads do split them.
  const rows = 300, n = 512, xn = randn(rows * n), gn = randn(n), dyn = randn(rows * n);
  const rs = { heads: 4, headDim: 64, dims: 64, style: "neox" as const }, pos = Int32Array.from({ length: rows }, (_, t) => t);
  const inv = Float32Array.from({ length: 32 }, (_, i) => Math.pow(10000, -i / 32)), xr = randn(rows * 256), dyr = randn(rows * 256);
  const gate = randn(100_000), up = randn(100_000), dgated = randn(100_000);
  const z = randn(rows * 500), tg = Int32Array.from({ length: rows }, (_, t) => (t * 13) % 500);
  const theta = randn(200_000), grad = randn(200_000);
  const run = () => {
    const dx = new Float32Array(300 * 200), dw = new Float32Array(250 * 200);
    K.linearBackward(dy, x, w, 300, 200, 250, dx, dw);
    const a = K.attention(q, kk, v, s, o);
    const g = [new Float32Array(q.length), new Float32Array(kk.length), new Float32Array(v.length)] as const;
    K.attentionBackward(dq, q, kk, v, a.probs, s, o, ...g);
    const la = K.attention(lq, lk, lv, ls, o);
    const lg = [new Float32Array(lq.length), new Float32Array(lk.length), new Float32Array(lv.length)] as const;
    K.attentionBackward(ldo, lq, lk, lv, la.probs, ls, o, ...lg);
    const dxn = new Float32Array(rows * n), dgn = new Float32Array(n);
    K.rmsNormBackward(dyn, xn, gn, rows, n, 1e-5, dxn, dgn);
    const yr = K.rope(xr, pos, inv, rs), dxr = new Float32Array(yr.length), dinv = new Float32Array(32);
    K.ropeBackward(dyr, yr, pos, inv, rs, dxr, dinv);
    const dgate = new Float32Array(gate.length), dup = new Float32Array(up.length);
    K.gatedBackward(dgated, gate, up, "silu", dgate, dup);
    const ce = K.crossEntropy(z, tg, 500, -100), dz = new Float32Array(z.length);
    K.crossEntropyBackward(z, tg, ce.lse, 500, -100, 0.01, dz);
    const t = theta.slice(), gr = grad.slice(), m = new Float32Array(t.length), vv = new Float32Array(t.length);
    K.adamw(t, gr, m, vv, { b1: 0.9, b2: 0.95, eps: 1e-8, decay: 0.9999, stepSize: 1e-3, bc2: 0.2 });
    K.scale(gr, 0.7);
    K.accumulate(gr, grad);
    return [K.linear(x, w, 300, 200, 250), dx, dw, a.out, ...g, la.out, ...lg, dxn, dgn, yr, dxr, dinv, dgate, dup,
      Float64Array.of(ce.total), ce.lse, dz, t, m, vv, gr, Float64Array.of(K.sumOfSquares(grad))];
  };
  const threads = cpu.info.threads;
  try {
    cpu.setThreads(1); const one = run();
    cpu.setThreads(2); const two = run();
    one.forEach((a, i) => assert.deepEqual(Buffer.from(a.buffer), Buffer.from(two[i].buffer), `output ${i} differs between 1 and 2 threads`));
  } finally { cpu.setThreads(threads); }
});
