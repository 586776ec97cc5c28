// Mixture of experts (OLMoE): a router scores the experts for each token, the top k run, and
// their outputs are summed weighted by the router's softmax probabilities (not renormalized).
//   p = softmax(x W_routerᵀ),  y = Σ_{e ∈ topk(p)} p_e · SwiGLU_e(x)

import { matmul, softmax } from "../primitives/index.js";
import { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";
import { feedForward, type FeedForwardWeights } from "./feedForward.js";

export interface ExpertsWeights {
  router: Weight;
  experts: FeedForwardWeights[];
}

/** x: [T, d] → [T, d] */
export function mixtureOfExperts(x: Tensor, w: ExpertsWeights, used: number): Tensor {
  const T = x.rows, d = x.cols, E = w.experts.length;
  const probs = softmax(matmul(x, w.router));                        // [T, E]
  // Route: for each expert, the tokens that chose it and with what weight.
  const routed: { tokens: number[]; weights: number[] }[] = Array.from({ length: E }, () => ({ tokens: [], weights: [] }));
  for (let t = 0; t < T; t++) {
    const p = probs.data.subarray(t * E, (t + 1) * E);
    const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => p[b] - p[a] || a - b);
    for (const e of order.slice(0, used)) {
      routed[e].tokens.push(t);
      routed[e].weights.push(p[e]);
    }
  }
  const y = x.like();                                                // [T, d]
  routed.forEach(({ tokens, weights }, e) => {
    if (tokens.length === 0) return;
    const xe = new Tensor([tokens.length, d], new Float32Array(tokens.length * d), x.device);
    tokens.forEach((t, i) => xe.data.set(x.data.subarray(t * d, (t + 1) * d), i * d));
    const ye = feedForward(xe, w.experts[e], "swiglu");              // [tokens, d]
    tokens.forEach((t, i) => {
      for (let j = 0; j < d; j++) y.data[t * d + j] += weights[i] * ye.data[i * d + j];
    });
  });
  return y;
}
