// Rotary position embedding: each pair of a head's dims turns by an angle position · frequency.
// Llama stores Q/K for interleaved pairs (2i, 2i+1); NEOX-style models pair i with i + d/2.

import type { RopeStyle } from "../kernels.js";

export function rope(x: Float32Array, T: number, nHeads: number, headDim: number, ropeDims: number, positions: Int32Array, invFreq: Float32Array, style: RopeStyle): void {
  const half = ropeDims / 2;
  for (let t = 0; t < T; t++) {
    const p = positions[t];
    for (let h = 0; h < nHeads; h++) {
      const o = (t * nHeads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const angle = p * invFreq[i];
        const cos = Math.cos(angle), sin = Math.sin(angle);
        const a = style === "interleaved" ? o + 2 * i : o + i;
        const b = style === "interleaved" ? a + 1 : a + half;
        const x0 = x[a], x1 = x[b];
        x[a] = x0 * cos - x1 * sin;
        x[b] = x0 * sin + x1 * cos;
      }
    }
  }
}
