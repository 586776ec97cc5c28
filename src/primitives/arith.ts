// Elementwise arithmetic.

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

/** a + b (same shape) */
export function add(a: Tensor, b: Tensor): Tensor {
  const y = a.output();
  kernelsFor(a.device).add(a.data, b.data, y.data);
  return y;
}
