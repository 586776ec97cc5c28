// Selecting rows of a matrix.

import type { Tensor } from "../tensor/tensor.js";

/** x: [T, d], rows: [S] → [S, d] */
export function gatherRows(x: Tensor, rows: readonly number[]): Tensor {
  const d = x.cols;
  const y = x.like([rows.length, d]);
  rows.forEach((r, i) => y.data.set(x.data.subarray(r * d, (r + 1) * d), i * d));
  return y;
}
