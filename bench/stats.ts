// The statistic the benchmark reports: medians of runs (a run that failed or was not measured,
// NaN, is left out).

/** The median of the finite values (the mean of the middle two for an even count); NaN when none. */
export function median(xs: readonly number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
}
