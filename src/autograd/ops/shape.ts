// Views and selections: the same numbers seen in another shape, or a part of them. Their
// backwards route the gradient back to where each number came from.

import type { Var } from "../tape.js";
import { accumulate } from "../tape.js";

/** Same values, another shape (no copy of the forward data). */
export function reshape(x: Var, shape: readonly number[]): Var {
  return x.tape.record(shape, x.data, [x], (out) => {
    // The same numbers, so the same gradient: x's first one can be out's buffer itself (every
    // reader of out has run by now) — unless x is a leaf, whose gradient outlives the tape.
    if (x.requiresGrad && !x.grad && x.backward) x.grad = out.grad;
    else accumulate(x, out.grad!);
  });
}

/** Columns [from, to) of x: [N, n] → [N, to − from] (e.g. q, k, v out of a fused projection). */
export function sliceCols(x: Var, from: number, to: number): Var {
  const N = x.rows, n = x.cols, w = to - from;
  const y = new Float32Array(N * w);
  for (let r = 0; r < N; r++) y.set(x.data.subarray(r * n + from, r * n + to), r * w);
  return x.tape.record([N, w], y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let r = 0; r < N; r++) for (let j = 0; j < w; j++) dx[r * n + from + j] += dy[r * w + j];
  });
}

/** Rows [from, to) of a matrix [R, n] (e.g. one expert's slice of a stacked expert tensor). */
export function sliceRows(x: Var, from: number, to: number): Var {
  const n = x.cols;
  return x.tape.record([to - from, n], x.data.subarray(from * n, to * n), [x], (out) => {
    const dx = x.gradBuffer().subarray(from * n, to * n), dy = out.grad!;
    for (let i = 0; i < dy.length; i++) dx[i] += dy[i];
  });
}

/** xᵀ: [R, C] → [C, R] (small matrices: a LoRA factor); the backward transposes ∂y back. */
export function transpose(x: Var): Var {
  const R = x.rows, C = x.cols, X = x.data;
  const y = new Float32Array(R * C);
  for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) y[j * R + i] = X[i * C + j];
  return x.tape.record([C, R], y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) dx[i * C + j] += dy[j * R + i];
  });
}

/** Rows `rows` of x: [N, n] → [rows.length, n]; the backward scatter-adds. */
export function gatherRows(x: Var, rows: readonly number[]): Var {
  const n = x.cols;
  const y = new Float32Array(rows.length * n);
  rows.forEach((r, i) => y.set(x.data.subarray(r * n, (r + 1) * n), i * n));
  return x.tape.record([rows.length, n], y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    rows.forEach((r, i) => {
      for (let j = 0; j < n; j++) dx[r * n + j] += dy[i * n + j];
    });
  });
}
