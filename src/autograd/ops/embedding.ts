// Embedding lookup, y[t] = E[ids[t]]; its backward scatter-adds ∂y[t] into row ids[t] of ∂E.

import type { Var } from "../tape.js";

/** table: [vocab, d], ids: [N] → [N, d] */
export function embedding(table: Var, ids: Int32Array): Var {
  const d = table.cols, V = table.rows;
  const y = table.tape.scratch(ids.length * d);
  ids.forEach((id, t) => {
    if (!(id >= 0 && id < V)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${V - 1})`);
    y.set(table.data.subarray(id * d, (id + 1) * d), t * d);
  });
  return table.tape.record([ids.length, d], y, [table], (out) => {
    const dy = out.grad!, dE = table.gradBuffer();
    ids.forEach((id, t) => {
      for (let j = 0; j < d; j++) dE[id * d + j] += dy[t * d + j];
    });
  });
}
