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

/** Clips in place (maxNorm ≤ 0: off); returns the norm before clipping. `kernels`: the backend
 *  that runs the sweeps (the ts reference by default). */
export function clipGradNorm(grads: Map<string, Float32Array>, maxNorm: number, kernels: TrainKernels = tsTrainKernels): number {
  const norm = globalNorm(grads.values(), kernels);
  if (maxNorm > 0 && norm > maxNorm) {
    const s = maxNorm / (norm + 1e-6);
    for (const g of grads.values()) kernels.scale(g, s);
  }
  return norm;
}
