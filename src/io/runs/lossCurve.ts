// The loss-curve picture of a run: training loss per step (and its running mean) and the
// validation losses, as a small hand-written SVG with labelled axes.

export interface CurvePoint { step: number; loss: number }

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

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function lossCurveSvg(train: readonly CurvePoint[], validation: readonly CurvePoint[], title = "loss"): string {
  const all = [...train, ...validation].filter((p) => Number.isFinite(p.loss));
  const maxStep = Math.max(1, ...all.map((p) => p.step));
  const lo = all.length ? Math.min(...all.map((p) => p.loss)) : 0, hi = all.length ? Math.max(...all.map((p) => p.loss)) : 1;
  const yLo = Math.max(0, lo - 0.05 * (hi - lo || 1)), yHi = hi + 0.05 * (hi - lo || 1);
  const x = (s: number) => L + ((W - L - R) * s) / maxStep;
  const y = (v: number) => T + ((H - T - B) * (yHi - v)) / (yHi - yLo || 1);
  const path = (ps: readonly CurvePoint[]) => ps.map((p, i) => `${i ? "L" : "M"}${x(p.step).toFixed(1)},${y(p.loss).toFixed(1)}`).join(" ");
  const smooth: CurvePoint[] = [];
  let ema = NaN;
  for (const p of train) { ema = Number.isNaN(ema) ? p.loss : 0.9 * ema + 0.1 * p.loss; smooth.push({ step: p.step, loss: ema }); }
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
  if (train.length) {
    parts.push(`<path d="${path(train)}" fill="none" stroke="#9ecae1" stroke-width="1"/>`);
    parts.push(`<path d="${path(smooth)}" fill="none" stroke="#08519c" stroke-width="2"/>`);
  }
  if (validation.length) {
    parts.push(`<path d="${path(validation)}" fill="none" stroke="#e6550d" stroke-width="2" stroke-dasharray="5,3"/>`);
    for (const p of validation) parts.push(`<circle cx="${x(p.step).toFixed(1)}" cy="${y(p.loss).toFixed(1)}" r="3" fill="#e6550d"/>`);
  }
  const lx = W - R - 150;
  parts.push(`<g transform="translate(${lx},${T + 10})"><line x1="0" x2="20" y1="0" y2="0" stroke="#08519c" stroke-width="2"/><text x="26" y="4">train (smoothed)</text>`,
    `<line x1="0" x2="20" y1="18" y2="18" stroke="#e6550d" stroke-width="2" stroke-dasharray="5,3"/><text x="26" y="22">validation</text></g>`);
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
