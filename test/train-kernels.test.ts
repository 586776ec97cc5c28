// The cpu backend's training kernels (native GEMM, attention forward and backward) against the
// ts reference, on shapes that cover the GEMM's edge tiles and every attention option; and the
// same bits for 1 and 2 threads. Float32 FMA sums vs float64 sums: agreement to 1e-5 relative
// to each output's scale is what 32-bit rounding over these lengths (≤ 600 terms) allows.

import { test } from "node:test";
import assert from "node:assert/strict";
import { cpuBackend } from "../src/backends/index.js";
import { trainKernelsFor, tsTrainKernels, type AttentionShape } from "../src/autograd/kernels/index.js";
import { Rng } from "../src/engines/rng.js";

const cpu = cpuBackend();
const skip = "error" in cpu ? `no native backend (${cpu.error})` : false;
const rng = new Rng(99);
const randn = (n: number) => Float32Array.from({ length: n }, () => rng.normal());

function close(name: string, got: Float32Array, want: Float32Array, tol = 1e-5): void {
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

test("cpu training kernels give the same bits for 1 and 2 threads", { skip }, () => {
  if ("error" in cpu) return;
  const K = trainKernelsFor("cpu");
  const x = randn(300 * 200), w = randn(250 * 200), dy = randn(300 * 250);
  const s: AttentionShape = { batch: 2, seq: 40, heads: 4, kvHeads: 2, headDim: 16 }, o = { scale: 0.25, softcap: 0, window: 0, causal: true };
  const q = randn(2 * 40 * 64), kk = randn(2 * 40 * 32), v = randn(2 * 40 * 32), dq = randn(2 * 40 * 64);
  const run = () => {
    const dx = new Float32Array(300 * 200), dw = new Float32Array(250 * 200);
    K.linearBackward(dy, x, w, 300, 200, 250, dx, dw);
    const a = K.attention(q, kk, v, s, o);
    const g = [new Float32Array(q.length), new Float32Array(kk.length), new Float32Array(v.length)] as const;
    K.attentionBackward(dq, q, kk, v, a.probs, s, o, ...g);
    return [K.linear(x, w, 300, 200, 250), dx, dw, a.out, ...g];
  };
  const threads = cpu.info.threads;
  try {
    cpu.setThreads(1); const one = run();
    cpu.setThreads(2); const two = run();
    one.forEach((a, i) => assert.deepEqual(Buffer.from(a.buffer), Buffer.from(two[i].buffer), `output ${i} differs between 1 and 2 threads`));
  } finally { cpu.setThreads(threads); }
});
