// Mean next-token cross-entropy over the targets that are not the ignore label:
//   loss = (1/N) Σ_t (logΣexp(z_t) − z_t[y_t]),   ∂z_t = (softmax(z_t) − onehot(y_t)) / N
// Sums in float64, on the tape's kernels.

import type { Var } from "../tape.js";

/** The label that marks a position as not scored (PyTorch's default ignore_index). */
export const IGNORE = -100;

/** logits: [N, vocab], targets: [N] → a scalar */
export function crossEntropy(logits: Var, targets: Int32Array, ignore = IGNORE): Var {
  const V = logits.cols, N = logits.rows, K = logits.tape.kernels;
  if (targets.length !== N) throw new RangeError(`crossEntropy: ${N} rows of logits, ${targets.length} targets`);
  let count = 0;
  for (const y of targets) {
    if (y === ignore) continue;
    if (!(y >= 0 && y < V)) throw new RangeError(`crossEntropy: target ${y} is outside 0..${V - 1}`);
    count++;
  }
  const { total, lse } = K.crossEntropy(logits.data, targets, V, ignore);
  const loss = count > 0 ? total / count : 0;
  return logits.tape.record([1], new Float32Array([loss]), [logits], (out) => {
    if (count > 0) K.crossEntropyBackward(logits.data, targets, lse, V, ignore, out.grad![0] / count, logits.gradBuffer());
  });
}
