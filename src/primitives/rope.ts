// Rotary position embedding (Su et al. 2021) and its frequency table.

import { kernelsFor } from "../backends/index.js";
import type { RopeStyle } from "../backends/kernels.js";
import type { Tensor } from "../tensor/tensor.js";

export interface RopeConfig {
  /** θ base: frequency of pair i is base^(−2i/dims). */
  base: number;
  /** How many dims of each head rotate (the rest pass through). */
  dims: number;
  style: RopeStyle;
  /** Linear position scaling: positions are multiplied by this (1 / scaling factor). */
  freqScale: number;
  /** Per-pair divisors of the frequencies (Llama 3's rope_freqs.weight), or null. */
  freqFactors: Float32Array | null;
}

/** invFreq[i] = freqScale · base^(−2i/dims) / freqFactors[i] */
export function ropeInvFreq(c: RopeConfig): Float32Array {
  const inv = new Float32Array(c.dims / 2);
  for (let i = 0; i < inv.length; i++) {
    inv[i] = (c.freqScale * Math.pow(c.base, (-2 * i) / c.dims)) / (c.freqFactors ? c.freqFactors[i] : 1);
  }
  return inv;
}

/** x: [T, heads, headDim], rotated in place at the given positions. */
export function rope(x: Tensor, positions: Int32Array, invFreq: Float32Array, c: Pick<RopeConfig, "dims" | "style">): Tensor {
  const [T, heads, headDim] = x.shape;
  kernelsFor(x.device).rope(x.data, T, heads, headDim, c.dims, positions, invFreq, c.style);
  return x;
}
