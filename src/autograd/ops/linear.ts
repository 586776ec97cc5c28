// y = x Wᵀ + b, over a float32 weight W: [out, in] (ggml dims [in, out]).
//   ∂x = ∂y W,   ∂W = ∂yᵀ x,   ∂b = Σ_rows ∂y
// The products run on the tape's kernels (src/autograd/kernels).

import type { Var } from "../tape.js";

/** x: [N, in], w: [out, in], bias: [out] → [N, out] */
export function linear(x: Var, w: Var, bias?: Var | null): Var {
  const nIn = w.cols, nOut = w.rows, N = x.rows, K = x.tape.kernels;
  if (x.cols !== nIn) throw new RangeError(`linear: x has ${x.cols} columns, the weight expects ${nIn}`);
  const y = K.linear(x.data, w.data, N, nIn, nOut, x.tape.scratch(N * nOut));
  if (bias) for (let n = 0; n < N; n++) for (let r = 0; r < nOut; r++) y[n * nOut + r] += bias.data[r];
  return x.tape.record([...x.shape.slice(0, -1), nOut], y, [x, w, bias], (out) => {
    const dy = out.grad!;
    K.linearBackward(dy, x.data, w.data, N, nIn, nOut, x.requiresGrad ? x.gradBuffer() : null, w.requiresGrad ? w.gradBuffer() : null);
    if (bias?.requiresGrad) {
      const db = new Float64Array(nOut);
      for (let n = 0; n < N; n++) for (let r = 0; r < nOut; r++) db[r] += dy[n * nOut + r];
      const g = bias.gradBuffer();
      for (let r = 0; r < nOut; r++) g[r] += db[r];
    }
  });
}
