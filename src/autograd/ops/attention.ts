// Scaled dot-product attention with grouped KV heads, soft-capped logits, a sliding window and
// a causal or bidirectional mask, over B sequences of T rows each, and its backward. For query
// t, head h:
//   s_j = c · tanh(scale · q·k_j / c) (or scale · q·k_j),  P = softmax(s),  out = Σ_j P_j v_j
//   ∂v_j += P_j ∂out,  ∂P_j = ∂out·v_j,  ∂s_j = P_j (∂P_j − Σ P ∂P),
//   ∂raw_j = ∂s_j (1 − (s_j / c)²) · scale,  ∂q += Σ_j ∂raw_j k_j,  ∂k_j += ∂raw_j q
// The loops run on the tape's kernels (src/autograd/kernels); P is kept for the backward.

import type { AttentionOptions } from "../../backends/kernels.js";
import type { AttentionShape } from "../kernels/index.js";
import type { Var } from "../tape.js";

export type { AttentionShape };

/** q: [B·T, heads, headDim]; k, v: [B·T, kvHeads, headDim] → [B·T, heads · headDim] */
export function attention(q: Var, k: Var, v: Var, s: AttentionShape, opts: AttentionOptions): Var {
  const K = q.tape.kernels;
  const { out, probs } = K.attention(q.data, k.data, v.data, s, opts, q.tape.scratch(q.size), (n) => q.tape.scratch(n));
  return q.tape.record([s.batch * s.seq, s.heads * s.headDim], out, [q, k, v], (o) => {
    // A gradient nobody reads still has to go somewhere: a scratch buffer for constant inputs.
    const buf = (x: Var) => (x.requiresGrad ? x.gradBuffer() : new Float32Array(x.size));
    K.attentionBackward(o.grad!, q.data, k.data, v.data, probs, s, opts, buf(q), buf(k), buf(v));
  });
}
