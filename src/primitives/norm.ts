// Normalizations over the last dimension.

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

/** rmsNorm(x) = x / √(mean(x²) + ε) ⊙ g */
export function rmsNorm(x: Tensor, g: Float32Array, eps: number): Tensor {
  const y = x.like();
  kernelsFor(x.device).rmsNorm(x.data, g, x.rows, x.cols, eps, y.data);
  return y;
}

/** layerNorm(x) = (x − mean) / √(var + ε) ⊙ g + b */
export function layerNorm(x: Tensor, g: Float32Array, b: Float32Array | null, eps: number): Tensor {
  const y = x.like();
  kernelsFor(x.device).layerNorm(x.data, g, b, x.rows, x.cols, eps, y.data);
  return y;
}
