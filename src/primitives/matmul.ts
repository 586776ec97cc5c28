// y = x Wᵀ: a linear layer over a stored (possibly quantized) weight, plus an optional bias.

import { kernelsFor } from "../backends/index.js";
import { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";

/** x: [T, in], W: [out, in] (ggml dims [in, out]) → [T, out] */
export function matmul(x: Tensor, w: Weight, bias?: Float32Array): Tensor {
  if (x.cols !== w.cols) throw new RangeError(`matmul: x has ${x.cols} columns, ${w.name} expects ${w.cols}`);
  const k = kernelsFor(x.device);
  const y = x.output([x.rows, w.rows]); // every kernel writes all of y
  k.matmul(x.data, w, x.rows, y.data);
  if (bias) for (let t = 0; t < x.rows; t++) k.add(y.data.subarray(t * w.rows, (t + 1) * w.rows), bias, y.data.subarray(t * w.rows, (t + 1) * w.rows));
  return y;
}

/** matmul(x, ws[i], biases[i]) for each weight, the same results; on a backend that has it, one
 *  kernel call for all (decode: one wake-up of the thread pool instead of one per weight). */
export function matmulMany(x: Tensor, ws: readonly Weight[], biases?: readonly (Float32Array | undefined)[]): Tensor[] {
  const k = kernelsFor(x.device);
  if (!k.matmulMany || ws.length < 2) return ws.map((w, i) => matmul(x, w, biases?.[i]));
  for (const w of ws) if (x.cols !== w.cols) throw new RangeError(`matmul: x has ${x.cols} columns, ${w.name} expects ${w.cols}`);
  const ys = ws.map((w) => x.output([x.rows, w.rows]));
  if (!k.matmulMany(x.data, ws, x.rows, ys.map((y) => y.data))) ws.forEach((w, i) => k.matmul(x.data, w, x.rows, ys[i].data));
  ws.forEach((w, i) => {
    const bias = biases?.[i], y = ys[i].data;
    if (bias) for (let t = 0; t < x.rows; t++) k.add(y.subarray(t * w.rows, (t + 1) * w.rows), bias, y.subarray(t * w.rows, (t + 1) * w.rows));
  });
  return ys;
}
