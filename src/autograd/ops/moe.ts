// Combining a mixture of experts' outputs: y[t] = Σ_{e routed for t} p[t, e] · out_e[t].
// The routing (which experts a token uses) is a discrete choice and has no gradient; the
// probabilities do:  ∂p[t, e] = ∂y[t] · out_e[t],  ∂out_e[t] = p[t, e] ∂y[t].

import type { Var } from "../tape.js";

export interface ExpertOutput {
  expert: number;
  /** The tokens (rows of y) this expert ran on, in the order of `out`'s rows. */
  tokens: readonly number[];
  /** [tokens.length, d] */
  out: Var;
}

/** probs: [N, experts] → y: [N, d] */
export function combineExperts(probs: Var, outputs: readonly ExpertOutput[], N: number, d: number): Var {
  const E = probs.cols;
  const y = new Float32Array(N * d);
  for (const { expert, tokens, out } of outputs) {
    tokens.forEach((t, i) => {
      const p = probs.data[t * E + expert];
      for (let j = 0; j < d; j++) y[t * d + j] += p * out.data[i * d + j];
    });
  }
  return probs.tape.record([N, d], y, [probs, ...outputs.map((o) => o.out)], (res) => {
    const dy = res.grad!;
    for (const { expert, tokens, out } of outputs) {
      const dout = out.requiresGrad ? out.gradBuffer() : null;
      const dp = probs.requiresGrad ? probs.gradBuffer() : null;
      tokens.forEach((t, i) => {
        const p = probs.data[t * E + expert];
        let dot = 0;
        for (let j = 0; j < d; j++) {
          dot += dy[t * d + j] * out.data[i * d + j];
          if (dout) dout[i * d + j] += p * dy[t * d + j];
        }
        if (dp) dp[t * E + expert] += dot;
      });
    }
  });
}
