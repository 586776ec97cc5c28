// Causal scaled dot-product attention with grouped KV heads, soft-capped logits and a sliding
// window, over B sequences of T rows each, and its backward. For query t, head h:
//   s_j = c · tanh(scale · q·k_j / c) (or scale · q·k_j),  P = softmax(s),  out = Σ_j P_j v_j
//   ∂v_j += P_j ∂out,  ∂P_j = ∂out·v_j,  ∂s_j = P_j (∂P_j − Σ P ∂P),
//   ∂raw_j = ∂s_j (1 − (s_j / c)²) · scale,  ∂q += Σ_j ∂raw_j k_j,  ∂k_j += ∂raw_j q

import type { AttentionOptions } from "../../backends/kernels.js";
import type { Var } from "../tape.js";

export interface AttentionShape {
  /** Sequences in the batch, and rows per sequence. */
  batch: number;
  seq: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

/** q: [B·T, heads, headDim]; k, v: [B·T, kvHeads, headDim] → [B·T, heads · headDim] */
export function attention(q: Var, k: Var, v: Var, s: AttentionShape, opts: AttentionOptions): Var {
  const { batch: B, seq: T, heads: H, kvHeads: KV, headDim: D } = s;
  const group = H / KV, qStride = H * D, kvStride = KV * D;
  const Q = q.data, K = k.data, V = v.data;
  // Keys seen by query t: [first(t), last(t)].
  const first = (t: number) => (opts.window > 0 ? Math.max(0, t - opts.window + 1) : 0);
  const last = (t: number) => (opts.causal ? t : T - 1);
  const probs = new Float64Array(B * H * T * T); // P[b, h, t, j]
  const y = new Float32Array(B * T * qStride);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const kvo = Math.floor(h / group) * D;
      for (let t = 0; t < T; t++) {
        const qo = (b * T + t) * qStride + h * D;
        const P = probs.subarray(((b * H + h) * T + t) * T, ((b * H + h) * T + t + 1) * T);
        let max = -Infinity;
        for (let j = first(t); j <= last(t); j++) {
          const ko = (b * T + j) * kvStride + kvo;
          let dot = 0;
          for (let i = 0; i < D; i++) dot += Q[qo + i] * K[ko + i];
          dot *= opts.scale;
          if (opts.softcap > 0) dot = opts.softcap * Math.tanh(dot / opts.softcap);
          P[j] = dot;
          if (dot > max) max = dot;
        }
        let sum = 0;
        for (let j = first(t); j <= last(t); j++) sum += P[j] = Math.exp(P[j] - max);
        for (let j = first(t); j <= last(t); j++) P[j] /= sum;
        for (let i = 0; i < D; i++) {
          let acc = 0;
          for (let j = first(t); j <= last(t); j++) acc += P[j] * V[(b * T + j) * kvStride + kvo + i];
          y[qo + i] = acc;
        }
      }
    }
  }
  return q.tape.record([B * T, qStride], y, [q, k, v], (out) => {
    const dy = out.grad!;
    const dq = new Float64Array(q.size), dk = new Float64Array(k.size), dv = new Float64Array(v.size);
    const dP = new Float64Array(T);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) {
        const kvo = Math.floor(h / group) * D;
        for (let t = 0; t < T; t++) {
          const qo = (b * T + t) * qStride + h * D;
          const P = probs.subarray(((b * H + h) * T + t) * T, ((b * H + h) * T + t + 1) * T);
          let sum = 0;
          for (let j = first(t); j <= last(t); j++) {
            const vo = (b * T + j) * kvStride + kvo;
            let dot = 0;
            for (let i = 0; i < D; i++) {
              dot += dy[qo + i] * V[vo + i];
              dv[vo + i] += P[j] * dy[qo + i];
            }
            dP[j] = dot;
            sum += P[j] * dot;
          }
          for (let j = first(t); j <= last(t); j++) {
            const ko = (b * T + j) * kvStride + kvo;
            let ds = P[j] * (dP[j] - sum);
            if (opts.softcap > 0) {
              let raw = 0;
              for (let i = 0; i < D; i++) raw += Q[qo + i] * K[ko + i];
              const th = Math.tanh((raw * opts.scale) / opts.softcap);
              ds *= 1 - th * th;
            }
            ds *= opts.scale;
            for (let i = 0; i < D; i++) {
              dq[qo + i] += ds * K[ko + i];
              dk[ko + i] += ds * Q[qo + i];
            }
          }
        }
      }
    }
    for (const [x, g] of [[q, dq], [k, dk], [v, dv]] as const) {
      if (!x.requiresGrad) continue;
      const xg = x.gradBuffer();
      for (let i = 0; i < xg.length; i++) xg[i] += g[i];
    }
  });
}
