// Embedding lookup: row ids[t] of the table, for each token.

import type { Device } from "../backends/kernels.js";
import { kernelsFor } from "../backends/index.js";
import { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";

/** table: [vocab, d] (ggml dims [d, vocab]), ids: [T] → [T, d] */
export function embedding(table: Weight, ids: Int32Array, device: Device): Tensor {
  const x = Tensor.zeros([ids.length, table.cols], device);
  kernelsFor(device).getRows(table, ids, x.data);
  return x;
}
