// RMSNorm and LayerNorm over rows. Sums in float64.

export function rmsNorm(x: Float32Array, weight: Float32Array, rows: number, n: number, eps: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let ss = 0;
    for (let i = 0; i < n; i++) ss += x[o + i] * x[o + i];
    const scale = 1 / Math.sqrt(ss / n + eps);
    for (let i = 0; i < n; i++) out[o + i] = x[o + i] * scale * weight[i];
  }
}

export function layerNorm(x: Float32Array, weight: Float32Array, bias: Float32Array | null, rows: number, n: number, eps: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += x[o + i];
    const mean = sum / n;
    let vs = 0;
    for (let i = 0; i < n; i++) vs += (x[o + i] - mean) ** 2;
    const scale = 1 / Math.sqrt(vs / n + eps);
    for (let i = 0; i < n; i++) out[o + i] = (x[o + i] - mean) * scale * weight[i] + (bias ? bias[i] : 0);
  }
}
