// Gated and plain activations of feed-forward layers.

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

/** SwiGLU: silu(gate) ⊙ up */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  const y = gate.output();
  kernelsFor(gate.device).swiglu(gate.data, up.data, y.data);
  return y;
}

/** GeGLU: gelu(gate) ⊙ up */
export function geglu(gate: Tensor, up: Tensor): Tensor {
  const y = gate.output();
  kernelsFor(gate.device).geglu(gate.data, up.data, y.data);
  return y;
}

/** GELU (tanh approximation) */
export function gelu(x: Tensor): Tensor {
  const y = x.output();
  kernelsFor(x.device).gelu(x.data, y.data);
  return y;
}
