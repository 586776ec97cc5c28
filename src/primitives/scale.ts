// Scaling and soft-capping, elementwise. Cheap enough to run in TypeScript on every backend
// (they touch one row of embeddings or logits per token).

import type { Tensor } from "../tensor/tensor.js";

/** s · x */
export function scale(x: Tensor, s: number): Tensor {
  const y = x.like();
  for (let i = 0; i < x.size; i++) y.data[i] = x.data[i] * s;
  return y;
}

/** cap · tanh(x / cap): squashes values smoothly into (−cap, cap) (Gemma 2's soft-capping). */
export function softcap(x: Tensor, cap: number): Tensor {
  const y = x.like();
  for (let i = 0; i < x.size; i++) y.data[i] = cap * Math.tanh(x.data[i] / cap);
  return y;
}
