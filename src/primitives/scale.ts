// Scaling and soft-capping, elementwise. Scaling is a backend kernel, as every op a recorded
// decode step replays must be (archs/decodeReplay.ts); soft-capping (Gemma 2's final logits) runs
// in TypeScript (Math.tanh's bits).

import { kernelsFor } from "../backends/index.js";
import type { Tensor } from "../tensor/tensor.js";

/** s · x */
export function scale(x: Tensor, s: number): Tensor {
  const y = x.output();
  kernelsFor(x.device).scale(x.data, s, y.data);
  return y;
}

/** cap · tanh(x / cap): squashes values smoothly into (−cap, cap) (Gemma 2's soft-capping). */
export function softcap(x: Tensor, cap: number): Tensor {
  const y = x.like();
  for (let i = 0; i < x.size; i++) y.data[i] = cap * Math.tanh(x.data[i] / cap);
  return y;
}
