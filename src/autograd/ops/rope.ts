// Rotary position embedding and its backward. Pair (a, b) of a head at position p turns by
// θ = p · invFreq[i]:  y_a = x_a cos θ − x_b sin θ,  y_b = x_a sin θ + x_b cos θ.
//   ∂x: the inverse rotation of ∂y;   ∂θ = −∂y_a y_b + ∂y_b y_a,   ∂invFreq[i] = Σ p ∂θ
// The frequencies are a Var too, so that Llama 3's rope_freqs.weight gets a gradient. The loops
// run on the tape's kernels (src/autograd/kernels).

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
  const [, heads, headDim] = x.shape, K = x.tape.kernels, s = { heads, headDim, dims, style };
  const y = K.rope(x.data, positions, invFreq.data, s, x.tape.scratch(x.size));
  return x.tape.record(x.shape, y, [x, invFreq], (out) => {
    K.ropeBackward(out.grad!, y, positions, invFreq.data, s, x.requiresGrad ? x.gradBuffer() : null, invFreq.requiresGrad ? invFreq.gradBuffer() : null);
  });
}
