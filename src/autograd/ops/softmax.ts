// Softmax over each row: y = exp(x − max) / Σ exp(x − max);  ∂x = y ⊙ (∂y − Σ y ∂y).

import type { Var } from "../tape.js";

export function softmax(x: Var): Var {
  const n = x.cols, rows = x.rows;
  const y = new Float32Array(x.size);
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (x.data[o + i] > max) max = x.data[o + i];
    let sum = 0;
    const e = new Float64Array(n);
    for (let i = 0; i < n; i++) sum += e[i] = Math.exp(x.data[o + i] - max);
    for (let i = 0; i < n; i++) y[o + i] = e[i] / sum;
  }
  return x.tape.record(x.shape, y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let r = 0; r < rows; r++) {
      const o = r * n;
      let dot = 0;
      for (let i = 0; i < n; i++) dot += y[o + i] * dy[o + i];
      for (let i = 0; i < n; i++) dx[o + i] += y[o + i] * (dy[o + i] - dot);
    }
  });
}
