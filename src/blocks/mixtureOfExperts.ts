// Mixture of experts (OLMoE): a router scores the experts for each token, the top k run, and
// their outputs are summed weighted by the router's softmax probabilities (not renormalized).
//   p = softmax(x W_routerᵀ),  y = Σ_{e ∈ topk(p)} p_e · SwiGLU_e(x)
// The routing is a discrete choice: in training it has no gradient; the probabilities do.
// Which rows go to which expert is the ops' to keep (ops.ts Routes): the host groups each
// expert's tokens (./hostExperts.ts), the GPU keeps the choice in GPU memory.

import type { Ops, Value } from "./ops.js";
import type { BlockNames } from "./tensorNames.js";

export { route } from "./hostExperts.js";

/** x: [T, d] → [T, d];  experts stacked in ffn_{gate,up,down}_exps, F rows each (down: d rows). */
export function mixtureOfExperts<X extends Value>(ops: Ops<X>, x: X, n: BlockNames, experts: number, used: number, nFF: number): X {
  const d = x.cols;
  const probs = ops.softmax(ops.linear(x, n.ffnRouter.weight));                 // [T, E]
  if (probs.cols !== experts) throw new RangeError(`${n.ffnRouter.weight}: ${probs.cols} experts, the model says ${experts}`);
  const routes = ops.topExperts(probs, used);                                   // `used` experts per token
  const xr = ops.routeRows(x, routes);                                          // [R = T·used, d]
  const gate = ops.expertLinear(xr, n.ffnGateExps.weight, routes, nFF);         // [R, F]
  const up = ops.expertLinear(xr, n.ffnUpExps.weight, routes, nFF);             // [R, F]
  const out = ops.expertLinear(ops.swiglu(gate, up), n.ffnDownExps.weight, routes, d); // [R, d]
  return ops.combineExperts(out, routes);                                       // [T, d]
}
