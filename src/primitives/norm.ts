// Normalizations over the last dimension.

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

/** rmsNorm(x) = x / √(mean(x²) + ε) ⊙ g */
export function rmsNorm(x: Tensor, g: Float32Array, eps: number): Tensor {
  const y = x.output();
  kernelsFor(x.device).rmsNorm(x.data, g, x.rows, x.cols, eps, y.data);
  return y;
}

/** [a + b, rmsNorm(a + b)]: a residual sum and the next sub-block's norm of it (one kernel call
 *  where the backend has the fused one; the same bits as add then rmsNorm). */
export function addRmsNorm(a: Tensor, b: Tensor, g: Float32Array, eps: number): [Tensor, Tensor] {
  const k = kernelsFor(a.device), sum = a.output(), y = a.output(); // written in full
  if (k.addRmsNorm) k.addRmsNorm(a.data, b.data, g, a.rows, a.cols, eps, sum.data, y.data);
  else {
    k.add(a.data, b.data, sum.data);
    k.rmsNorm(sum.data, g, sum.rows, sum.cols, eps, y.data);
  }
  return [sum, y];
}

/** layerNorm(x) = (x − mean) / √(var + ε) ⊙ g + b */
export function layerNorm(x: Tensor, g: Float32Array, b: Float32Array | null, eps: number): Tensor {
  const y = x.output();
  kernelsFor(x.device).layerNorm(x.data, g, b, x.rows, x.cols, eps, y.data);
  return y;
}
