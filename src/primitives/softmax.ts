// Softmax and log-softmax over the last dimension.

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

export function softmax(x: Tensor): Tensor {
  const y = x.like();
  y.data.set(x.data);
  kernelsFor(x.device).softmax(y.data, x.rows, x.cols);
  return y;
}

/** log Σ exp(row), computed stably in float64. */
export function logSumExp(row: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i] - max);
  return max + Math.log(s);
}
