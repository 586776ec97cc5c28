// Mixture of experts (OLMoE): a router scores the experts for each token, the top k run, and
// their outputs are summed weighted by the router's softmax probabilities (not renormalized).
//   p = softmax(x W_routerᵀ),  y = Σ_{e ∈ topk(p)} p_e · SwiGLU_e(x)
// The routing is a discrete choice: in training it has no gradient; the probabilities do.

import { feedForward } from "./feedForward.js";
import type { ExpertResult, Ops, Value } from "./ops.js";
import type { BlockNames } from "./tensorNames.js";

/** For each expert, the tokens (rows of probs [T, E]) whose top `used` experts include it. */
export function route(probs: Float32Array, T: number, E: number, used: number): number[][] {
  const tokens: number[][] = Array.from({ length: E }, () => []);
  for (let t = 0; t < T; t++) {
    const p = probs.subarray(t * E, (t + 1) * E);
    const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => p[b] - p[a] || a - b);
    for (const e of order.slice(0, used)) tokens[e].push(t);
  }
  return tokens;
}

/** x: [T, d] → [T, d];  experts stacked in ffn_{gate,up,down}_exps, F rows each (down: d rows). */
export function mixtureOfExperts<X extends Value>(ops: Ops<X>, x: X, n: BlockNames, experts: number, used: number, nFF: number): X {
  const T = x.rows, d = x.cols;
  const probs = ops.softmax(ops.linear(x, n.ffnRouter.weight));      // [T, E]
  const outputs: ExpertResult<X>[] = [];
  route(probs.data, T, experts, used).forEach((tokens, e) => {
    if (tokens.length === 0) return;
    const out = feedForward(ops, ops.gatherRows(x, tokens), { gate: n.ffnGateExps, up: n.ffnUpExps, down: n.ffnDownExps }, "swiglu", false,
      { gateUp: [e * nFF, (e + 1) * nFF], down: [e * d, (e + 1) * d] }); // [tokens, d]
    outputs.push({ expert: e, tokens, out });
  });
  return ops.combineExperts(probs, outputs, T, d);                   // [T, d]
}
