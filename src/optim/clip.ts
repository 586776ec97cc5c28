// Global-norm gradient clipping (torch.nn.utils.clip_grad_norm_): when ‖g‖₂ over all parameters
// exceeds maxNorm, scale every gradient by maxNorm / (‖g‖₂ + 1e-6).

import type { TrainKernels } from "../autograd/kernels/index.js";
import { tsTrainKernels } from "../autograd/kernels/ts.js";

/** ‖g‖₂ over every gradient, in float64 (each array's sum of squares, added in order). */
export function globalNorm(grads: Iterable<Float32Array>, kernels: TrainKernels = tsTrainKernels): number {
  let ss = 0;
  for (const g of grads) ss += kernels.sumOfSquares(g);
  return Math.sqrt(ss);
}

/** The factor clipping scales every gradient by, for a global norm (1: none; maxNorm ≤ 0: off). */
export function clipScale(norm: number, maxNorm: number): number {
  return maxNorm > 0 && norm > maxNorm ? maxNorm / (norm + 1e-6) : 1;
}

/** Clips in place (maxNorm ≤ 0: off); returns the norm before clipping. `kernels`: the backend
 *  that runs the sweeps (the ts reference by default). The Trainer does not call this: it hands
 *  clipScale to the AdamW update instead, which saves a pass over every gradient (same bits). */
export function clipGradNorm(grads: Map<string, Float32Array>, maxNorm: number, kernels: TrainKernels = tsTrainKernels): number {
  const norm = globalNorm(grads.values(), kernels);
  const s = clipScale(norm, maxNorm);
  if (s !== 1) for (const g of grads.values()) kernels.scale(g, s);
  return norm;
}
