// Learning-rate schedules: the rate for step s (0-based) of a run of `steps` steps.
//   constant:  lr (after an optional linear warmup)
//   cosine:    linear warmup over `warmup` steps, then lr·(min + (1 − min)·½(1 + cos(π·progress)))

export type ScheduleKind = "constant" | "cosine";

export interface ScheduleOptions {
  kind: ScheduleKind;
  lr: number;
  steps: number;
  warmup: number;
  /** Final rate as a fraction of lr (cosine only; default 0.1). */
  minRatio?: number;
}

export function learningRate(s: number, o: ScheduleOptions): number {
  if (o.warmup > 0 && s < o.warmup) return (o.lr * (s + 1)) / o.warmup;
  if (o.kind === "constant") return o.lr;
  const min = o.minRatio ?? 0.1;
  const span = Math.max(1, o.steps - o.warmup);
  const progress = Math.min(1, (s - o.warmup) / span);
  return o.lr * (min + (1 - min) * 0.5 * (1 + Math.cos(Math.PI * progress)));
}
