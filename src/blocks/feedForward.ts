// Position-wise feed-forward layers.
//   SwiGLU: W_down (silu(W_gate x) ⊙ W_up x)      (Llama, Qwen, OLMoE experts)
//   GeGLU:  W_down (gelu(W_gate x) ⊙ W_up x)      (Gemma)
//   MLP:    W_down gelu(W_up x + b_up) + b_down   (GPT-2, ViT)

import type { Ops, Value } from "./ops.js";
import type { LayerNames } from "./tensorNames.js";

export type FeedForwardKind = "swiglu" | "geglu" | "mlp";

export interface FeedForwardNames {
  gate: LayerNames;
  up: LayerNames;
  down: LayerNames;
}

/** x: [T, d] → [T, d];  `bias`: the MLP's up and down projections carry biases. */
export function feedForward<X extends Value>(ops: Ops<X>, x: X, n: FeedForwardNames, kind: FeedForwardKind, bias = false): X {
  if (kind === "mlp") {
    const b = (l: LayerNames) => (bias ? l.bias : null);
    return ops.linear(ops.gelu(ops.linear(x, n.up.weight, b(n.up))), n.down.weight, b(n.down)); // [T, d]
  }
  const [gate, up] = ops.linears(x, [n.gate.weight, n.up.weight]); // [T, ffn] each
  const h = kind === "swiglu" ? ops.swiglu(gate, up) : ops.geglu(gate, up); // [T, ffn]
  return ops.linear(h, n.down.weight);                                // [T, d]
}
