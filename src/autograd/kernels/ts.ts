// The reference training kernels: plain loops, sums in float64.

import type { AttentionOptions } from "../../backends/kernels.js";
import type { AttentionShape, TrainKernels } from "./index.js";

function linear(X: Float32Array, W: Float32Array, N: number, nIn: number, nOut: number): Float32Array {
  const y = new Float32Array(N * nOut);
  for (let r = 0; r < nOut; r++) {
    const wo = r * nIn;
    for (let n = 0; n < N; n++) {
      const xo = n * nIn;
      let s = 0;
      for (let c = 0; c < nIn; c++) s += X[xo + c] * W[wo + c];
      y[n * nOut + r] = s;
    }
  }
  return y;
}

function linearBackward(dy: Float32Array, X: Float32Array, W: Float32Array, N: number, nIn: number, nOut: number, dxOut: Float32Array | null, dwOut: Float32Array | null): void {
  const dx = dxOut ? new Float64Array(N * nIn) : null;
  const dw = dwOut ? new Float64Array(nOut * nIn) : null;
  for (let r = 0; r < nOut; r++) {
    const wo = r * nIn;
    for (let n = 0; n < N; n++) {
      const g = dy[n * nOut + r];
      if (g === 0) continue;
      const xo = n * nIn;
      if (dx) for (let c = 0; c < nIn; c++) dx[xo + c] += g * W[wo + c];
      if (dw) for (let c = 0; c < nIn; c++) dw[wo + c] += g * X[xo + c];
    }
  }
  if (dx) for (let i = 0; i < dx.length; i++) dxOut![i] += dx[i];
  if (dw) for (let i = 0; i < dw.length; i++) dwOut![i] += dw[i];
}

/** Keys seen by query t: [first(t), last(t)]. */
function keyRange(T: number, opts: AttentionOptions) {
  return {
    first: (t: number) => (opts.window > 0 ? Math.max(0, t - opts.window + 1) : 0),
    last: (t: number) => (opts.causal ? t : T - 1),
  };
}

function attention(Q: Float32Array, K: Float32Array, V: Float32Array, s: AttentionShape, opts: AttentionOptions) {
  const { batch: B, seq: T, heads: H, kvHeads: KV, headDim: D } = s;
  const group = H / KV, qStride = H * D, kvStride = KV * D;
  const { first, last } = keyRange(T, opts);
  const probs = new Float64Array(B * H * T * T); // P[b, h, t, j]
  const out = new Float32Array(B * T * qStride);
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
          out[qo + i] = acc;
        }
      }
    }
  }
  return { out, probs };
}

function attentionBackward(dy: Float32Array, Q: Float32Array, K: Float32Array, V: Float32Array, probs: Float32Array | Float64Array,
  s: AttentionShape, opts: AttentionOptions, dqOut: Float32Array, dkOut: Float32Array, dvOut: Float32Array): void {
  const { batch: B, seq: T, heads: H, kvHeads: KV, headDim: D } = s;
  const group = H / KV, qStride = H * D, kvStride = KV * D;
  const { first, last } = keyRange(T, opts);
  const dq = new Float64Array(dqOut.length), dk = new Float64Array(dkOut.length), dv = new Float64Array(dvOut.length);
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
  for (const [acc, g] of [[dqOut, dq], [dkOut, dk], [dvOut, dv]] as const) for (let i = 0; i < acc.length; i++) acc[i] += g[i];
}

export const tsTrainKernels: TrainKernels = { device: "ts", linear, linearBackward, attention, attentionBackward };
