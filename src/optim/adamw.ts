// AdamW (Loshchilov & Hutter 2019), as torch.optim.AdamW computes it: decoupled weight decay,
// then the bias-corrected Adam step. For step t = 1, 2, …:
//   θ ← θ (1 − lr·λ)
//   m ← β₁ m + (1 − β₁) g,   v ← β₂ v + (1 − β₂) g²
//   θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)

import type { TrainKernels } from "../autograd/kernels/index.js";
import { tsTrainKernels } from "../autograd/kernels/ts.js";

export interface AdamWOptions {
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  /** Which parameters decay (default: those with 2 or more dims — not norms or biases). */
  decays?: (name: string, dims: readonly number[]) => boolean;
}

export interface AdamWState {
  step: number;
  m: Map<string, Float32Array>;
  v: Map<string, Float32Array>;
}

export class AdamW {
  readonly state: AdamWState = { step: 0, m: new Map(), v: new Map() };
  /** `kernels`: the backend that runs the update's sweep (the ts reference by default; cpu gives the same bits). */
  constructor(readonly options: AdamWOptions, readonly kernels: TrainKernels = tsTrainKernels) {}

  /** One update of every parameter in place, at learning rate `lr` (the schedule's value), from
   *  the gradients scaled by `gradScale` (global-norm clipping, clipScale; the arrays are not written). */
  step(params: Map<string, Float32Array>, dims: Map<string, number[]>, grads: Map<string, Float32Array>, lr = this.options.lr, gradScale = 1): void {
    const { betas: [b1, b2], eps, weightDecay } = this.options;
    const decays = this.options.decays ?? ((_n, d) => d.length >= 2);
    const t = ++this.state.step;
    const bc1 = 1 - b1 ** t, bc2 = Math.sqrt(1 - b2 ** t);
    const stepSize = lr / bc1;
    for (const [name, theta] of params) {
      const g = grads.get(name);
      if (!g) continue;
      const m = getOrZeros(this.state.m, name, theta.length), v = getOrZeros(this.state.v, name, theta.length);
      const decay = weightDecay > 0 && decays(name, dims.get(name) ?? [theta.length]) ? 1 - lr * weightDecay : 1;
      this.kernels.adamw(theta, g, m, v, { b1, b2, eps, decay, stepSize, bc2, gradScale });
    }
  }
}

function getOrZeros(map: Map<string, Float32Array>, name: string, n: number): Float32Array {
  let a = map.get(name);
  if (!a) map.set(name, (a = new Float32Array(n)));
  return a;
}
