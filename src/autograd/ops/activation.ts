// Activations of feed-forward layers, with their derivatives.
//   silu(x) = x σ(x),                       silu'(x) = σ(x) (1 + x (1 − σ(x)))
//   gelu(x) = ½ x (1 + tanh u),  u = √(2/π) (x + 0.044715 x³)   (tanh approximation)
//   gelu'(x) = ½ (1 + tanh u) + ½ x (1 − tanh² u) √(2/π) (1 + 3 · 0.044715 x²)

import { geluTanh } from "../../backends/ts/elementwise.js";
import type { GateActivation } from "../kernels/index.js";
import { geluGrad, siluGrad } from "../kernels/ts.js";
import type { Var } from "../tape.js";

export { geluGrad, siluGrad };

const K = Math.sqrt(2 / Math.PI);

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

/** GELU (tanh approximation); tanh u is kept from the forward for the backward (same values as
 *  geluTanh and geluGrad, one tanh per element instead of two). */
export function gelu(x: Var): Var {
  const X = x.data, n = x.size;
  const y = new Float32Array(n), th = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = X[i], t = Math.tanh(K * (v + 0.044715 * v * v * v));
    th[i] = t;
    y[i] = 0.5 * v * (1 + t);
  }
  return x.tape.record(x.shape, y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let i = 0; i < n; i++) {
      const v = X[i], t = th[i];
      dx[i] += (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * K * (1 + 3 * 0.044715 * v * v)) * dy[i];
    }
  });
}
