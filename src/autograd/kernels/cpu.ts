// Training kernels on the native cpu backend: every product is one call to the addon's float32
// GEMM (C (+)= op(A) op(B), transposes by stride, no copies), attention one call each way.

import type { NativeAddon } from "../../backends/cpu/native.js";
import type { TrainKernels } from "./index.js";

let cached: { addon: NativeAddon; kernels: TrainKernels } | undefined;

export function cpuTrainKernels(a: NativeAddon): TrainKernels {
  if (cached?.addon === a) return cached.kernels;
  const kernels: TrainKernels = {
    device: "cpu",
    linear(x, w, N, nIn, nOut) {
      const y = new Float32Array(N * nOut);
      a.gemm(x, nIn, 0, w, nIn, 1, y, nOut, N, nOut, nIn, 0);              // y = x Wᵀ
      return y;
    },
    linearBackward(dy, x, w, N, nIn, nOut, dx, dw) {
      if (dx) a.gemm(dy, nOut, 0, w, nIn, 0, dx, nIn, N, nIn, nOut, 1);    // dx += ∂y W
      if (dw) a.gemm(dy, nOut, 1, x, nIn, 0, dw, nIn, nOut, nIn, N, 1);    // dW += ∂yᵀ x
    },
    attention(q, k, v, s, o) {
      const out = new Float32Array(s.batch * s.seq * s.heads * s.headDim);
      const probs = new Float32Array(s.batch * s.heads * s.seq * s.seq);
      a.attentionTrain(s.batch, s.seq, s.heads, s.kvHeads, s.headDim, o.scale, o.softcap, o.window, o.causal ? 1 : 0, q, k, v, out, probs);
      return { out, probs };
    },
    attentionBackward(dy, q, k, v, probs, s, o, dq, dk, dv) {
      if (!(probs instanceof Float32Array)) throw new TypeError("attentionBackward: the cpu backend keeps float32 probabilities");
      a.attentionTrainBackward(s.batch, s.seq, s.heads, s.kvHeads, s.headDim, o.scale, o.softcap, o.window, o.causal ? 1 : 0,
        q, k, v, probs, dy, dq, dk, dv);
    },
  };
  cached = { addon: a, kernels };
  return kernels;
}
