// A normalization layer with its parameters: RMSNorm (g) or LayerNorm (g, b).

import { layerNorm, rmsNorm } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";

export interface NormWeights {
  kind: "rms" | "layer";
  eps: number;
  weight: Float32Array;
  bias: Float32Array | null;
}

/** x: [T, d] → [T, d] */
export function norm(x: Tensor, n: NormWeights): Tensor {
  return n.kind === "rms" ? rmsNorm(x, n.weight, n.eps) : layerNorm(x, n.weight, n.bias, n.eps);
}
