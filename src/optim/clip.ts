// Global-norm gradient clipping (torch.nn.utils.clip_grad_norm_): when ‖g‖₂ over all parameters
// exceeds maxNorm, scale every gradient by maxNorm / (‖g‖₂ + 1e-6).

/** ‖g‖₂ over every gradient, in float64. */
export function globalNorm(grads: Iterable<Float32Array>): number {
  let ss = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) ss += g[i] * g[i];
  return Math.sqrt(ss);
}

/** Clips in place (maxNorm ≤ 0: off); returns the norm before clipping. */
export function clipGradNorm(grads: Map<string, Float32Array>, maxNorm: number): number {
  const norm = globalNorm(grads.values());
  if (maxNorm > 0 && norm > maxNorm) {
    const s = maxNorm / (norm + 1e-6);
    for (const g of grads.values()) for (let i = 0; i < g.length; i++) g[i] *= s;
  }
  return norm;
}
