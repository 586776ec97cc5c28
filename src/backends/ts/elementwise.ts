// Activations and elementwise arithmetic.

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

export const silu = (x: number): number => x / (1 + Math.exp(-x));

/** GELU, tanh approximation: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))). */
export const geluTanh = (x: number): number => 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));

export function swiglu(gate: Float32Array, up: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = silu(gate[i]) * up[i];
}

export function geglu(gate: Float32Array, up: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = geluTanh(gate[i]) * up[i];
}

export function gelu(x: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = geluTanh(x[i]);
}

/** out = s · x, each product rounded from double to float32. */
export function scale(x: Float32Array, s: number, out: Float32Array): void {
  for (let i = 0; i < x.length; i++) out[i] = x[i] * s;
}

export function add(a: Float32Array, b: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = a[i] + b[i];
}

export function softmax(x: Float32Array, rows: number, n: number): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (x[o + i] > max) max = x[o + i];
    let sum = 0;
    for (let i = 0; i < n; i++) sum += x[o + i] = Math.exp(x[o + i] - max);
    for (let i = 0; i < n; i++) x[o + i] /= sum;
  }
}
