// Normalizations over the last dimension, with their backwards. Sums in float64.
//   RMSNorm:   y = x · r ⊙ g,            r = 1 / √(mean(x²) + ε)
//              ∂x = r (∂y ⊙ g) − x r³ mean(∂y ⊙ g ⊙ x),   ∂g = Σ_rows ∂y ⊙ x r
//   LayerNorm: y = x̂ ⊙ g + b,  x̂ = (x − μ) r,  r = 1 / √(var + ε)
//              ∂x = r (∂x̂ − mean(∂x̂) − x̂ mean(∂x̂ ⊙ x̂)),  ∂x̂ = ∂y ⊙ g

import type { Var } from "../tape.js";

/** x: [rows, n], g: [n] → [rows, n]  (on the tape's kernels; r is recomputed in the backward) */
export function rmsNorm(x: Var, g: Var, eps: number): Var {
  const n = x.cols, rows = x.rows, K = x.tape.kernels;
  const y = K.rmsNorm(x.data, g.data, rows, n, eps, x.tape.scratch(x.size));
  return x.tape.record(x.shape, y, [x, g], (out) => {
    K.rmsNormBackward(out.grad!, x.data, g.data, rows, n, eps, x.requiresGrad ? x.gradBuffer() : null, g.requiresGrad ? g.gradBuffer() : null);
  });
}

export function layerNorm(x: Var, g: Var, b: Var | null, eps: number): Var {
  const n = x.cols, rows = x.rows, X = x.data, G = g.data;
  const xhat = new Float64Array(x.size), inv = new Float64Array(rows);
  const y = new Float32Array(x.size);
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += X[o + i];
    const mean = sum / n;
    let vs = 0;
    for (let i = 0; i < n; i++) vs += (X[o + i] - mean) ** 2;
    inv[r] = 1 / Math.sqrt(vs / n + eps);
    for (let i = 0; i < n; i++) {
      xhat[o + i] = (X[o + i] - mean) * inv[r];
      y[o + i] = xhat[o + i] * G[i] + (b ? b.data[i] : 0);
    }
  }
  return x.tape.record(x.shape, y, [x, g, b], (out) => {
    const dy = out.grad!;
    const dg = new Float64Array(n), db = new Float64Array(n);
    const dx = x.requiresGrad ? x.gradBuffer() : null;
    for (let r = 0; r < rows; r++) {
      const o = r * n;
      let m1 = 0, m2 = 0;
      for (let i = 0; i < n; i++) {
        const dh = dy[o + i] * G[i];
        m1 += dh;
        m2 += dh * xhat[o + i];
        dg[i] += dy[o + i] * xhat[o + i];
        db[i] += dy[o + i];
      }
      m1 /= n; m2 /= n;
      if (dx) for (let i = 0; i < n; i++) dx[o + i] += inv[r] * (dy[o + i] * G[i] - m1 - xhat[o + i] * m2);
    }
    if (g.requiresGrad) { const gg = g.gradBuffer(); for (let i = 0; i < n; i++) gg[i] += dg[i]; }
    if (b?.requiresGrad) { const bg = b.gradBuffer(); for (let i = 0; i < n; i++) bg[i] += db[i]; }
  });
}
