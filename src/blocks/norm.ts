// A normalization layer by its GGUF name: RMSNorm (g) or LayerNorm (g and, if stored, b).

import type { Ops, Value } from "./ops.js";
import type { LayerNames } from "./tensorNames.js";

export interface NormConfig {
  kind: "rms" | "layer";
  eps: number;
}

/** x: [T, d] → [T, d] */
export function norm<X extends Value>(ops: Ops<X>, x: X, n: LayerNames, c: NormConfig): X {
  return c.kind === "rms"
    ? ops.rmsNorm(x, n.weight, c.eps)
    : ops.layerNorm(x, n.weight, ops.has(n.bias) ? n.bias : null, c.eps);
}
