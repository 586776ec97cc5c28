// Scaling and soft-capping, elementwise. Cheap enough to run in TypeScript (they touch one row of
// embeddings or logits per token); scaling runs in the backend's kernel where it has one, with
// the same bits, so that a recorded decode step holds it (archs/decodeReplay.ts).

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

/** Whether scale() runs in a kernel of x's backend (else in TypeScript). */
export function scaleInKernel(x: Tensor): boolean {
  return x.device === "cpu" && kernelsFor(x.device).scale !== undefined; // the other devices have no host kernel for it
}

/** s · x */
export function scale(x: Tensor, s: number): Tensor {
  const y = x.output();
  if (scaleInKernel(x)) kernelsFor(x.device).scale!(x.data, s, y.data);
  else for (let i = 0; i < x.size; i++) y.data[i] = x.data[i] * s;
  return y;
}

/** cap · tanh(x / cap): squashes values smoothly into (−cap, cap) (Gemma 2's soft-capping). */
export function softcap(x: Tensor, cap: number): Tensor {
  const y = x.like();
  for (let i = 0; i < x.size; i++) y.data[i] = cap * Math.tanh(x.data[i] / cap);
  return y;
}
