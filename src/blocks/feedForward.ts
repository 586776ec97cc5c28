// Position-wise feed-forward layers.
//   SwiGLU: W_down (silu(W_gate x) ⊙ W_up x)      (Llama, Qwen, OLMoE experts)
//   GeGLU:  W_down (gelu(W_gate x) ⊙ W_up x)      (Gemma)
//   MLP:    W_down gelu(W_up x + b_up) + b_down   (GPT-2)

import { geglu, gelu, matmul, swiglu } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";

export type FeedForwardKind = "swiglu" | "geglu" | "mlp";

export interface FeedForwardWeights {
  gate?: Weight;
  up: Weight;
  down: Weight;
  upBias?: Float32Array;
  downBias?: Float32Array;
}

/** x: [T, d] → [T, d] */
export function feedForward(x: Tensor, w: FeedForwardWeights, kind: FeedForwardKind): Tensor {
  if (kind === "mlp") return matmul(gelu(matmul(x, w.up, w.upBias)), w.down, w.downBias);
  const gate = matmul(x, w.gate!);                                  // [T, ffn]
  const up = matmul(x, w.up);                                       // [T, ffn]
  const h = kind === "swiglu" ? swiglu(gate, up) : geglu(gate, up); // [T, ffn]
  return matmul(h, w.down);                                         // [T, d]
}
