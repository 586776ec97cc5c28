// The reference training kernels: plain loops, sums in float64.

import type { AttentionOptions } from "../../backends/kernels.js";
import { geluTanh, silu } from "../../backends/ts/elementwise.js";
import type { AdamWStep, AttentionShape, GateActivation, RopeShape, TrainKernels } from "./index.js";

function linear(X: Float32Array, W: Float32Array, N: number, nIn: number, nOut: number, y = new Float32Array(N * nOut)): Float32Array {
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

function attention(Q: Float32Array, K: Float32Array, V: Float32Array, s: AttentionShape, opts: AttentionOptions, out = new Float32Array(Q.length)) {
  const { batch: B, seq: T, heads: H, kvHeads: KV, headDim: D } = s;
  const group = H / KV, qStride = H * D, kvStride = KV * D;
  const { first, last } = keyRange(T, opts);
  const probs = new Float64Array(B * H * T * T); // P[b, h, t, j]
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

/** 1/√(mean(x²) + ε) of row r. */
function rmsInverse(X: Float32Array, o: number, n: number, eps: number): number {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += X[o + i] * X[o + i];
  return 1 / Math.sqrt(ss / n + eps);
}

function rmsNorm(X: Float32Array, G: Float32Array, rows: number, n: number, eps: number, y = new Float32Array(rows * n)): Float32Array {
  for (let r = 0; r < rows; r++) {
    const o = r * n, s = rmsInverse(X, o, n, eps);
    for (let i = 0; i < n; i++) y[o + i] = X[o + i] * s * G[i];
  }
  return y;
}

function rmsNormBackward(dy: Float32Array, X: Float32Array, G: Float32Array, rows: number, n: number, eps: number, dx: Float32Array | null, dgOut: Float32Array | null): void {
  const dg = dgOut ? new Float64Array(n) : null;
  for (let r = 0; r < rows; r++) {
    const o = r * n, s = rmsInverse(X, o, n, eps);
    let dot = 0;
    for (let i = 0; i < n; i++) {
      dot += dy[o + i] * G[i] * X[o + i];
      if (dg) dg[i] += dy[o + i] * X[o + i] * s;
    }
    if (dx) {
      const c = (s * s * s * dot) / n;
      for (let i = 0; i < n; i++) dx[o + i] += s * dy[o + i] * G[i] - X[o + i] * c;
    }
  }
  if (dg) for (let i = 0; i < n; i++) dgOut![i] += dg[i];
}

/** The two elements of pair i of the head at offset o. */
function ropePair(o: number, i: number, s: RopeShape): [number, number] {
  return s.style === "interleaved" ? [o + 2 * i, o + 2 * i + 1] : [o + i, o + i + s.dims / 2];
}

function rope(x: Float32Array, positions: Int32Array, F: Float32Array, s: RopeShape, y = new Float32Array(x.length)): Float32Array {
  const N = x.length / (s.heads * s.headDim), half = s.dims / 2;
  y.set(x);
  for (let t = 0; t < N; t++) {
    for (let h = 0; h < s.heads; h++) {
      const o = (t * s.heads + h) * s.headDim;
      for (let i = 0; i < half; i++) {
        const angle = positions[t] * F[i], cos = Math.cos(angle), sin = Math.sin(angle);
        const [a, b] = ropePair(o, i, s);
        const x0 = x[a], x1 = x[b];
        y[a] = x0 * cos - x1 * sin;
        y[b] = x0 * sin + x1 * cos;
      }
    }
  }
  return y;
}

function ropeBackward(dy: Float32Array, y: Float32Array, positions: Int32Array, F: Float32Array, s: RopeShape, dx: Float32Array | null, dinvOut: Float32Array | null): void {
  const N = y.length / (s.heads * s.headDim), half = s.dims / 2;
  const dinv = dinvOut ? new Float64Array(half) : null;
  for (let t = 0; t < N; t++) {
    const p = positions[t];
    for (let h = 0; h < s.heads; h++) {
      const o = (t * s.heads + h) * s.headDim;
      if (dx) for (let i = s.dims; i < s.headDim; i++) dx[o + i] += dy[o + i];
      for (let i = 0; i < half; i++) {
        const angle = p * F[i], cos = Math.cos(angle), sin = Math.sin(angle);
        const [a, b] = ropePair(o, i, s);
        if (dx) {
          dx[a] += dy[a] * cos + dy[b] * sin;
          dx[b] += -dy[a] * sin + dy[b] * cos;
        }
        if (dinv) dinv[i] += p * (-dy[a] * y[b] + dy[b] * y[a]);
      }
    }
  }
  if (dinv) for (let i = 0; i < half; i++) dinvOut![i] += dinv[i];
}

const GELU_K = Math.sqrt(2 / Math.PI);

/** silu'(x) = σ(x) (1 + x (1 − σ(x))) */
export function siluGrad(x: number): number {
  const s = 1 / (1 + Math.exp(-x));
  return s * (1 + x * (1 - s));
}

/** gelu'(x) = ½ (1 + tanh u) + ½ x (1 − tanh² u) √(2/π) (1 + 3 · 0.044715 x²),  u = √(2/π) (x + 0.044715 x³) */
export function geluGrad(x: number): number {
  const t = Math.tanh(GELU_K * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_K * (1 + 3 * 0.044715 * x * x);
}

const ACTIVATIONS = { silu: [silu, siluGrad], gelu: [geluTanh, geluGrad] } as const;

function gated(gate: Float32Array, up: Float32Array, act: GateActivation, y = new Float32Array(gate.length)): Float32Array {
  const [f] = ACTIVATIONS[act];
  for (let i = 0; i < y.length; i++) y[i] = f(gate[i]) * up[i];
  return y;
}

function gatedBackward(dy: Float32Array, G: Float32Array, U: Float32Array, act: GateActivation, dg: Float32Array | null, du: Float32Array | null): void {
  const [f, grad] = ACTIVATIONS[act];
  if (dg) for (let i = 0; i < dg.length; i++) dg[i] += grad(G[i]) * U[i] * dy[i];
  if (du) for (let i = 0; i < du.length; i++) du[i] += f(G[i]) * dy[i];
}

function crossEntropy(Z: Float32Array, targets: Int32Array, V: number, ignore: number): { total: number; lse: Float64Array } {
  const N = targets.length, lse = new Float64Array(N);
  let total = 0;
  for (let t = 0; t < N; t++) {
    if (targets[t] === ignore) continue;
    const o = t * V;
    let max = -Infinity;
    for (let i = 0; i < V; i++) if (Z[o + i] > max) max = Z[o + i];
    let s = 0;
    for (let i = 0; i < V; i++) s += Math.exp(Z[o + i] - max);
    lse[t] = max + Math.log(s);
    total += lse[t] - Z[o + targets[t]];
  }
  return { total, lse };
}

function crossEntropyBackward(Z: Float32Array, targets: Int32Array, lse: Float64Array, V: number, ignore: number, g: number, dz: Float32Array): void {
  for (let t = 0; t < targets.length; t++) {
    if (targets[t] === ignore) continue;
    const o = t * V;
    for (let i = 0; i < V; i++) dz[o + i] += g * Math.exp(Z[o + i] - lse[t]);
    dz[o + targets[t]] -= g;
  }
}

function add(a: Float32Array, b: Float32Array, y = new Float32Array(a.length)): Float32Array {
  for (let i = 0; i < y.length; i++) y[i] = a[i] + b[i];
  return y;
}

function accumulate(dst: Float32Array, src: Float32Array): void {
  for (let i = 0; i < dst.length; i++) dst[i] += src[i];
}

function sumOfSquares(x: Float32Array): number {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  return ss;
}

function scale(x: Float32Array, s: number): void {
  for (let i = 0; i < x.length; i++) x[i] *= s;
}

function adamw(theta: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, h: AdamWStep): void {
  const s = h.gradScale ?? 1;
  for (let i = 0; i < theta.length; i++) {
    const gi = s !== 1 ? Math.fround(g[i] * s) : g[i];
    m[i] = h.b1 * m[i] + (1 - h.b1) * gi;
    v[i] = h.b2 * v[i] + (1 - h.b2) * gi * gi;
    theta[i] = theta[i] * h.decay - (h.stepSize * m[i]) / (Math.sqrt(v[i]) / h.bc2 + h.eps);
  }
}

export const tsTrainKernels: TrainKernels = {
  device: "ts", linear, linearBackward, attention, attentionBackward, rmsNorm, rmsNormBackward, rope, ropeBackward,
  gated, gatedBackward, crossEntropy, crossEntropyBackward, add, accumulate, sumOfSquares, scale, adamw,
};
