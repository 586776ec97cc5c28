// Mean next-token cross-entropy over the targets that are not the ignore label:
//   loss = (1/N) Σ_t (logΣexp(z_t) − z_t[y_t]),   ∂z_t = (softmax(z_t) − onehot(y_t)) / N
// Computed in float64.

import type { Var } from "../tape.js";

/** The label that marks a position as not scored (PyTorch's default ignore_index). */
export const IGNORE = -100;

/** logits: [N, vocab], targets: [N] → a scalar */
export function crossEntropy(logits: Var, targets: Int32Array, ignore = IGNORE): Var {
  const V = logits.cols, N = logits.rows, Z = logits.data;
  if (targets.length !== N) throw new RangeError(`crossEntropy: ${N} rows of logits, ${targets.length} targets`);
  const lse = new Float64Array(N);
  let total = 0, count = 0;
  for (let t = 0; t < N; t++) {
    if (targets[t] === ignore) continue;
    if (!(targets[t] >= 0 && targets[t] < V)) throw new RangeError(`crossEntropy: target ${targets[t]} is outside 0..${V - 1}`);
    const o = t * V;
    let max = -Infinity;
    for (let i = 0; i < V; i++) if (Z[o + i] > max) max = Z[o + i];
    let s = 0;
    for (let i = 0; i < V; i++) s += Math.exp(Z[o + i] - max);
    lse[t] = max + Math.log(s);
    total += lse[t] - Z[o + targets[t]];
    count++;
  }
  const loss = count > 0 ? total / count : 0;
  return logits.tape.record([1], new Float32Array([loss]), [logits], (out) => {
    if (count === 0) return;
    const g = out.grad![0] / count, dz = logits.gradBuffer();
    for (let t = 0; t < N; t++) {
      if (targets[t] === ignore) continue;
      const o = t * V;
      for (let i = 0; i < V; i++) dz[o + i] += g * Math.exp(Z[o + i] - lse[t]);
      dz[o + targets[t]] -= g;
    }
  });
}
