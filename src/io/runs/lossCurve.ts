// Loss-curve pictures as small hand-written SVGs with labelled axes. One series is one run: its
// training loss per step (faint), the running mean of it (bold) and its validation losses
// (dashed, with dots). A run bundle draws one series (lossCurveSvg); comparing runs draws
// several in one picture (lossCurvesSvg), each in its own colour.

export interface CurvePoint { step: number; loss: number }

export interface CurveSeries {
  /** Legend text of the smoothed training curve. */
  label: string;
  train: readonly CurvePoint[];
  validation?: readonly CurvePoint[];
  /** Legend text of the validation curve (default: "LABEL validation"). */
  validationLabel?: string;
  /** Stroke colour (default: the palette's next one); the validation curve's, if different. */
  color?: string;
  validationColor?: string;
}

/** Colours of successive series (ColorBrewer's dark blue, orange, green, purple, red, brown). */
const PALETTE = ["#08519c", "#e6550d", "#31a354", "#756bb1", "#de2d26", "#8c6d31"];

const W = 640, H = 400, L = 60, R = 20, T = 30, B = 50;

/** Round tick values covering [lo, hi]. */
function ticks(lo: number, hi: number, n = 5): number[] {
  const span = hi - lo || 1;
  const raw = span / n, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= n) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** The running mean (exponential, 0.9) of a training curve: what the eye wants from noisy steps. */
function smoothed(train: readonly CurvePoint[]): CurvePoint[] {
  let ema = NaN;
  return train.map((p) => {
    ema = Number.isNaN(ema) ? p.loss : 0.9 * ema + 0.1 * p.loss;
    return { step: p.step, loss: ema };
  });
}

/** One picture of one or more runs' loss curves on shared axes. */
export function lossCurvesSvg(series: readonly CurveSeries[], title = "loss"): string {
  const all = series.flatMap((s) => [...s.train, ...(s.validation ?? [])]).filter((p) => Number.isFinite(p.loss));
  const maxStep = Math.max(1, ...all.map((p) => p.step));
  const lo = all.length ? Math.min(...all.map((p) => p.loss)) : 0, hi = all.length ? Math.max(...all.map((p) => p.loss)) : 1;
  const yLo = Math.max(0, lo - 0.05 * (hi - lo || 1)), yHi = hi + 0.05 * (hi - lo || 1);
  const x = (s: number) => L + ((W - L - R) * s) / maxStep;
  const y = (v: number) => T + ((H - T - B) * (yHi - v)) / (yHi - yLo || 1);
  const path = (ps: readonly CurvePoint[]) => ps.map((p, i) => `${i ? "L" : "M"}${x(p.step).toFixed(1)},${y(p.loss).toFixed(1)}`).join(" ");
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">${esc(title)}</text>`,
  ];
  for (const v of ticks(yLo, yHi)) {
    parts.push(`<line x1="${L}" x2="${W - R}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`);
    parts.push(`<text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${v}</text>`);
  }
  for (const s of ticks(0, maxStep)) {
    parts.push(`<line x1="${x(s).toFixed(1)}" x2="${x(s).toFixed(1)}" y1="${T}" y2="${H - B}" stroke="#eee"/>`);
    parts.push(`<text x="${x(s).toFixed(1)}" y="${H - B + 16}" text-anchor="middle">${s}</text>`);
  }
  parts.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#444"/>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">step</text>`);
  parts.push(`<text x="16" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(T + H - B) / 2})">cross-entropy (nats/token)</text>`);

  // The curves, one group per series, and the legend entries they need.
  const legend: { text: string; color: string; dashed: boolean }[] = [];
  series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length], vColor = s.validationColor ?? color;
    const validation = s.validation ?? [];
    parts.push(`<g class="series" data-label="${esc(s.label)}">`);
    if (s.train.length) {
      parts.push(`<path d="${path(s.train)}" fill="none" stroke="${color}" stroke-opacity="0.35" stroke-width="1"/>`);
      parts.push(`<path d="${path(smoothed(s.train))}" fill="none" stroke="${color}" stroke-width="2"/>`);
      legend.push({ text: s.label, color, dashed: false });
    }
    if (validation.length) {
      parts.push(`<path d="${path(validation)}" fill="none" stroke="${vColor}" stroke-width="2" stroke-dasharray="5,3"/>`);
      for (const p of validation) parts.push(`<circle cx="${x(p.step).toFixed(1)}" cy="${y(p.loss).toFixed(1)}" r="3" fill="${vColor}"/>`);
      legend.push({ text: s.validationLabel ?? `${s.label} validation`, color: vColor, dashed: true });
    }
    parts.push("</g>");
  });
  if (legend.length) {
    // Top right, on a white box so that curves passing under it stay readable.
    const width = 36 + 7 * Math.max(...legend.map((e) => e.text.length)), lx = W - R - width - 6;
    parts.push(`<g class="legend" transform="translate(${lx},${T + 16})">`,
      `<rect x="-6" y="-8" width="${width + 6}" height="${18 * legend.length + 4}" fill="white" fill-opacity="0.85"/>`);
    legend.forEach((e, i) => parts.push(
      `<line x1="0" x2="20" y1="${18 * i + 2}" y2="${18 * i + 2}" stroke="${e.color}" stroke-width="2"${e.dashed ? ' stroke-dasharray="5,3"' : ""}/>`,
      `<text x="26" y="${18 * i + 6}">${esc(e.text)}</text>`));
    parts.push("</g>");
  }
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

/** The picture of one run (a run bundle's loss.svg): training loss, its running mean, validation. */
export function lossCurveSvg(train: readonly CurvePoint[], validation: readonly CurvePoint[], title = "loss"): string {
  return lossCurvesSvg([{ label: "train (smoothed)", train, validation, validationLabel: "validation", color: "#08519c", validationColor: "#e6550d" }], title);
}
