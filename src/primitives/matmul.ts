// y = x Wᵀ: a linear layer over a stored (possibly quantized) weight, plus an optional bias.

import { kernelsFor } from "../backends/index.js";
import { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";

/** x: [T, in], W: [out, in] (ggml dims [in, out]) → [T, out] */
export function matmul(x: Tensor, w: Weight, bias?: Float32Array): Tensor {
  if (x.cols !== w.cols) throw new RangeError(`matmul: x has ${x.cols} columns, ${w.name} expects ${w.cols}`);
  const k = kernelsFor(x.device);
  const y = x.like([x.rows, w.rows]);
  k.matmul(x.data, w, x.rows, y.data);
  if (bias) for (let t = 0; t < x.rows; t++) k.add(y.data.subarray(t * w.rows, (t + 1) * w.rows), bias, y.data.subarray(t * w.rows, (t + 1) * w.rows));
  return y;
}
