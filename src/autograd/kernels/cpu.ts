// Training kernels on the native cpu backend: every product is one call to the addon's float32
// GEMM (C (+)= op(A) op(B), transposes by stride, no copies), attention one call each way, and
// the O(tokens · d) ops one call each: forwards through the inference kernels (native/ops.c),
// backwards, the cross-entropy and the optimizer's sweeps through native/train_ops.c.

import type { NativeAddon } from "../../backends/cpu/native.js";
import type { TrainKernels } from "./index.js";

let cached: { addon: NativeAddon; kernels: TrainKernels } | undefined;

export function cpuTrainKernels(a: NativeAddon): TrainKernels {
  if (cached?.addon === a) return cached.kernels;
  const kernels: TrainKernels = {
    device: "cpu",
    linear(x, w, N, nIn, nOut, y = new Float32Array(N * nOut)) {
      a.gemm(x, nIn, 0, w, nIn, 1, y, nOut, N, nOut, nIn, 0);              // y = x Wᵀ
      return y;
    },
    linearBackward(dy, x, w, N, nIn, nOut, dx, dw) {
      if (dx) a.gemm(dy, nOut, 0, w, nIn, 0, dx, nIn, N, nIn, nOut, 1);    // dx += ∂y W
      if (dw) a.gemm(dy, nOut, 1, x, nIn, 0, dw, nIn, nOut, nIn, N, 1);    // dW += ∂yᵀ x
    },
    attention(q, k, v, s, o, out = new Float32Array(q.length), scratch = (n) => new Float32Array(n)) {
      const probs = scratch(s.batch * s.heads * s.seq * s.seq);
      a.attentionTrain(s.batch, s.seq, s.heads, s.kvHeads, s.headDim, o.scale, o.softcap, o.window, o.causal ? 1 : 0, q, k, v, out, probs);
      return { out, probs };
    },
    attentionBackward(dy, q, k, v, probs, s, o, dq, dk, dv) {
      if (!(probs instanceof Float32Array)) throw new TypeError("attentionBackward: the cpu backend keeps float32 probabilities");
      a.attentionTrainBackward(s.batch, s.seq, s.heads, s.kvHeads, s.headDim, o.scale, o.softcap, o.window, o.causal ? 1 : 0,
        q, k, v, probs, dy, dq, dk, dv);
    },
    rmsNorm(x, g, rows, n, eps, y = new Float32Array(rows * n)) {
      a.rmsNorm(x, g, rows, n, eps, y);
      return y;
    },
    rmsNormBackward(dy, x, g, rows, n, eps, dx, dg) {
      a.rmsNormBackward(dy, x, g, rows, n, eps, dx, dg);
    },
    rope(x, positions, invFreq, s, y = new Float32Array(x.length)) {
      y.set(x);
      a.rope(y, x.length / (s.heads * s.headDim), s.heads, s.headDim, s.dims, positions, invFreq, s.style === "neox" ? 1 : 0);
      return y;
    },
    ropeBackward(dy, y, positions, invFreq, s, dx, dinv) {
      a.ropeBackward(dy, y, y.length / (s.heads * s.headDim), s.heads, s.headDim, s.dims, positions, invFreq, s.style === "neox" ? 1 : 0, dx, dinv);
    },
    gated(gate, up, act, y = new Float32Array(gate.length)) {
      if (act === "silu") a.swiglu(gate, up, y);
      else a.geglu(gate, up, y);
      return y;
    },
    gatedBackward(dy, gate, up, act, dgate, dup) {
      a.gatedBackward(act === "silu" ? 0 : 1, gate, up, dy, dgate, dup);
    },
    crossEntropy(logits, targets, V, ignore) {
      const lse = new Float64Array(targets.length);
      return { total: a.crossEntropy(logits, targets, targets.length, V, ignore, lse), lse };
    },
    crossEntropyBackward(logits, targets, lse, V, ignore, g, dz) {
      a.crossEntropyBackward(logits, targets, lse, targets.length, V, ignore, g, dz);
    },
    add(x, y, out = new Float32Array(x.length)) {
      a.add(x, y, out);
      return out;
    },
    accumulate(dst, src) { a.accumulate(dst, src); },
    sumOfSquares(x) { return a.sumSquares(x); },
    scale(x, s) { a.scale(x, s); },
    adamw(theta, g, m, v, h) { a.adamw(theta, g, m, v, h.b1, h.b2, h.eps, h.decay, h.stepSize, h.bc2, h.gradScale ?? 1); },
  };
  cached = { addon: a, kernels };
  return kernels;
}
