// Rotary position embedding and its backward. Pair (a, b) of a head at position p turns by
// θ = p · invFreq[i]:  y_a = x_a cos θ − x_b sin θ,  y_b = x_a sin θ + x_b cos θ.
//   ∂x: the inverse rotation of ∂y;   ∂θ = −∂y_a y_b + ∂y_b y_a,   ∂invFreq[i] = Σ p ∂θ
// The frequencies are a Var too, so that Llama 3's rope_freqs.weight gets a gradient.

import type { RopeStyle } from "../../backends/kernels.js";
import type { RopeConfig } from "../../primitives/index.js";
import type { Tape, Var } from "../tape.js";

/** invFreq[i] = freqScale · base^(−2i/dims) / factors[i];  ∂factors[i] = −∂invFreq[i] · invFreq[i] / factors[i] */
export function ropeFrequencies(tape: Tape, c: Omit<RopeConfig, "freqFactors">, factors: Var | null): Var {
  const half = c.dims / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = (c.freqScale * Math.pow(c.base, (-2 * i) / c.dims)) / (factors ? factors.data[i] : 1);
  return tape.record([half], inv, [factors], (out) => {
    const df = factors!.gradBuffer(), dinv = out.grad!;
    for (let i = 0; i < half; i++) df[i] -= (dinv[i] * inv[i]) / factors!.data[i];
  });
}

/** x: [N, heads, headDim] at positions [N] → rotated copy; the first `dims` dims of each head turn. */
export function rope(x: Var, positions: Int32Array, invFreq: Var, dims: number, style: RopeStyle): Var {
  const [N, heads, headDim] = x.shape;
  const half = dims / 2, F = invFreq.data;
  const pair = (o: number, i: number): [number, number] => (style === "interleaved" ? [o + 2 * i, o + 2 * i + 1] : [o + i, o + i + half]);
  const y = new Float32Array(x.data);
  for (let t = 0; t < N; t++) {
    for (let h = 0; h < heads; h++) {
      const o = (t * heads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const angle = positions[t] * F[i], cos = Math.cos(angle), sin = Math.sin(angle);
        const [a, b] = pair(o, i);
        const x0 = x.data[a], x1 = x.data[b];
        y[a] = x0 * cos - x1 * sin;
        y[b] = x0 * sin + x1 * cos;
      }
    }
  }
  return x.tape.record(x.shape, y, [x, invFreq], (out) => {
    const dy = out.grad!;
    const dx = x.requiresGrad ? x.gradBuffer() : null;
    const dinv = invFreq.requiresGrad ? new Float64Array(half) : null;
    for (let t = 0; t < N; t++) {
      const p = positions[t];
      for (let h = 0; h < heads; h++) {
        const o = (t * heads + h) * headDim;
        if (dx) for (let i = dims; i < headDim; i++) dx[o + i] += dy[o + i];
        for (let i = 0; i < half; i++) {
          const angle = p * F[i], cos = Math.cos(angle), sin = Math.sin(angle);
          const [a, b] = pair(o, i);
          if (dx) {
            dx[a] += dy[a] * cos + dy[b] * sin;
            dx[b] += -dy[a] * sin + dy[b] * cos;
          }
          if (dinv) dinv[i] += p * (-dy[a] * y[b] + dy[b] * y[a]);
        }
      }
    }
    if (dinv) { const g = invFreq.gradBuffer(); for (let i = 0; i < half; i++) g[i] += dinv[i]; }
  });
}
