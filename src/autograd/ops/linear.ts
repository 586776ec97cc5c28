// y = x Wᵀ + b, over a float32 weight W: [out, in] (ggml dims [in, out]).
//   ∂x = ∂y W,   ∂W = ∂yᵀ x,   ∂b = Σ_rows ∂y
// Sums in float64.

import type { Var } from "../tape.js";
import { accumulate } from "../tape.js";

/** x: [N, in], w: [out, in], bias: [out] → [N, out] */
export function linear(x: Var, w: Var, bias?: Var | null): Var {
  const nIn = w.cols, nOut = w.rows, N = x.rows;
  if (x.cols !== nIn) throw new RangeError(`linear: x has ${x.cols} columns, the weight expects ${nIn}`);
  const X = x.data, W = w.data, B = bias?.data;
  const y = new Float32Array(N * nOut);
  for (let r = 0; r < nOut; r++) {
    const wo = r * nIn;
    for (let n = 0; n < N; n++) {
      const xo = n * nIn;
      let s = 0;
      for (let c = 0; c < nIn; c++) s += X[xo + c] * W[wo + c];
      y[n * nOut + r] = B ? s + B[r] : s;
    }
  }
  return x.tape.record([...x.shape.slice(0, -1), nOut], y, [x, w, bias], (out) => {
    const dy = out.grad!;
    const dx = x.requiresGrad ? new Float64Array(N * nIn) : null;
    const dw = w.requiresGrad ? new Float64Array(nOut * nIn) : null;
    const db = bias?.requiresGrad ? new Float64Array(nOut) : null;
    for (let r = 0; r < nOut; r++) {
      const wo = r * nIn;
      for (let n = 0; n < N; n++) {
        const g = dy[n * nOut + r];
        if (g === 0) continue;
        const xo = n * nIn;
        if (dx) for (let c = 0; c < nIn; c++) dx[xo + c] += g * W[wo + c];
        if (dw) for (let c = 0; c < nIn; c++) dw[wo + c] += g * X[xo + c];
        if (db) db[r] += g;
      }
    }
    if (dx) accumulate(x, dx);
    if (dw) accumulate(w, dw);
    if (db) accumulate(bias, db);
  });
}
