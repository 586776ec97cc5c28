// Activations of feed-forward layers, with their derivatives.
//   silu(x) = x σ(x),                       silu'(x) = σ(x) (1 + x (1 − σ(x)))
//   gelu(x) = ½ x (1 + tanh u),  u = √(2/π) (x + 0.044715 x³)   (tanh approximation)
//   gelu'(x) = ½ (1 + tanh u) + ½ x (1 − tanh² u) √(2/π) (1 + 3 · 0.044715 x²)

import { geluTanh } from "../../backends/ts/elementwise.js";
import type { GateActivation } from "../kernels/index.js";
import { geluGrad, siluGrad } from "../kernels/ts.js";
import type { Var } from "../tape.js";

export { geluGrad, siluGrad };

/** act(gate) ⊙ up:  ∂gate = act'(gate) up ∂y,  ∂up = act(gate) ∂y  (on the tape's kernels) */
function gated(gate: Var, up: Var, act: GateActivation): Var {
  const K = gate.tape.kernels;
  const y = K.gated(gate.data, up.data, act, gate.tape.scratch(gate.size));
  return gate.tape.record(gate.shape, y, [gate, up], (out) => {
    K.gatedBackward(out.grad!, gate.data, up.data, act, gate.requiresGrad ? gate.gradBuffer() : null, up.requiresGrad ? up.gradBuffer() : null);
  });
}

/** SwiGLU: silu(gate) ⊙ up */
export const swiglu = (gate: Var, up: Var): Var => gated(gate, up, "silu");

/** GeGLU: gelu(gate) ⊙ up */
export const geglu = (gate: Var, up: Var): Var => gated(gate, up, "gelu");

/** GELU (tanh approximation) */
export function gelu(x: Var): Var {
  const y = new Float32Array(x.size);
  for (let i = 0; i < y.length; i++) y[i] = geluTanh(x.data[i]);
  return x.tape.record(x.shape, y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let i = 0; i < dx.length; i++) dx[i] += geluGrad(x.data[i]) * dy[i];
  });
}
