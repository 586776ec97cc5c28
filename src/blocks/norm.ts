// A normalization layer by its GGUF name: RMSNorm (g) or LayerNorm (g and, if stored, b).

import type { Ops, Value } from "./ops.js";
import type { LayerNames } from "./tensorNames.js";

export interface NormConfig {
  kind: "rms" | "layer";
  eps: number;
}

/** x + h and its norm: [T, d] each (RMSNorm: one ops call, a residual add fused with the next
 *  sub-block's norm). */
export function addNorm<X extends Value>(ops: Ops<X>, x: X, h: X, n: LayerNames, c: NormConfig): [X, X] {
  if (c.kind === "rms") return ops.addRmsNorm(x, h, n.weight, c.eps);
  const sum = ops.add(x, h);
  return [sum, norm(ops, sum, n, c)];
}

/** x: [T, d] → [T, d] */
export function norm<X extends Value>(ops: Ops<X>, x: X, n: LayerNames, c: NormConfig): X {
  return c.kind === "rms"
    ? ops.rmsNorm(x, n.weight, c.eps)
    : ops.layerNorm(x, n.weight, ops.has(n.bias) ? n.bias : null, c.eps);
}
