// Activations of feed-forward layers, with their derivatives.
//   silu(x) = x σ(x),                       silu'(x) = σ(x) (1 + x (1 − σ(x)))
//   gelu(x) = ½ x (1 + tanh u),  u = √(2/π) (x + 0.044715 x³)   (tanh approximation)
//   gelu'(x) = ½ (1 + tanh u) + ½ x (1 − tanh² u) √(2/π) (1 + 3 · 0.044715 x²)

import { geluTanh, silu } from "../../backends/ts/elementwise.js";
import type { Var } from "../tape.js";

const K = Math.sqrt(2 / Math.PI);

export function siluGrad(x: number): number {
  const s = 1 / (1 + Math.exp(-x));
  return s * (1 + x * (1 - s));
}

export function geluGrad(x: number): number {
  const t = Math.tanh(K * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * 0.044715 * x * x);
}

/** act(gate) ⊙ up:  ∂gate = act'(gate) up ∂y,  ∂up = act(gate) ∂y */
function gated(gate: Var, up: Var, act: (x: number) => number, grad: (x: number) => number): Var {
  const y = new Float32Array(gate.size);
  for (let i = 0; i < y.length; i++) y[i] = act(gate.data[i]) * up.data[i];
  return gate.tape.record(gate.shape, y, [gate, up], (out) => {
    const dy = out.grad!, G = gate.data, U = up.data;
    if (gate.requiresGrad) { const dg = gate.gradBuffer(); for (let i = 0; i < dg.length; i++) dg[i] += grad(G[i]) * U[i] * dy[i]; }
    if (up.requiresGrad) { const du = up.gradBuffer(); for (let i = 0; i < du.length; i++) du[i] += act(G[i]) * dy[i]; }
  });
}

/** SwiGLU: silu(gate) ⊙ up */
export const swiglu = (gate: Var, up: Var): Var => gated(gate, up, silu, siluGrad);

/** GeGLU: gelu(gate) ⊙ up */
export const geglu = (gate: Var, up: Var): Var => gated(gate, up, geluTanh, geluGrad);

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
