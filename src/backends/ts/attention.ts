// Scaled dot-product attention of T queries over a KV cache, one head at a time:
//   score_j = scale · q·k_j (soft-capped if asked), w = softmax(score), out = Σ_j w_j v_j
// Query head h reads KV head h / (nHeads / nKVHeads) (grouped-query attention).

import type { AttentionOptions } from "../kernels.js";

export function attention(q: Float32Array, k: Float32Array, v: Float32Array, T: number, pos0: number, nKeys: number, nHeads: number, nKVHeads: number, headDim: number, opts: AttentionOptions, out: Float32Array): void {
  const group = nHeads / nKVHeads;
  const kvStride = nKVHeads * headDim;
  const scores = new Float64Array(nKeys);
  for (let t = 0; t < T; t++) {
    const p = pos0 + t;
    const last = opts.causal ? Math.min(p, nKeys - 1) : nKeys - 1;
    const first = opts.window > 0 ? Math.max(0, p - opts.window + 1) : 0;
    for (let h = 0; h < nHeads; h++) {
      const qo = (t * nHeads + h) * headDim;
      const kvo = Math.floor(h / group) * headDim;
      let max = -Infinity;
      for (let j = first; j <= last; j++) {
        const ko = j * kvStride + kvo;
        let s = 0;
        for (let i = 0; i < headDim; i++) s += q[qo + i] * k[ko + i];
        s *= opts.scale;
        if (opts.softcap > 0) s = opts.softcap * Math.tanh(s / opts.softcap);
        scores[j] = s;
        if (s > max) max = s;
      }
      let sum = 0;
      for (let j = first; j <= last; j++) sum += scores[j] = Math.exp(scores[j] - max);
      const oo = (t * nHeads + h) * headDim;
      for (let i = 0; i < headDim; i++) {
        let acc = 0;
        for (let j = first; j <= last; j++) acc += scores[j] * v[j * kvStride + kvo + i];
        out[oo + i] = acc / sum;
      }
    }
  }
}
