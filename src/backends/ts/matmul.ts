// Matrix products over stored weights, the plain way: dequantize one weight row at a time
// (never the whole matrix), then take its dot product with every activation row.
// Accumulation: float64, four interleaved partial sums (columns c ≡ 0, 1, 2, 3 mod 4) added
// at the end, rounded to float32 once per output.

import { dequantizeRow, rowBytes } from "../../quant/index.js";
import { GGMLType } from "../../io/gguf/types.js";
import type { Weight } from "../../tensor/weight.js";

/** The weight's row r as float32: a view for F32 weights, else dequantized into `scratch`. */
function weightRow(w: Weight, r: number, scratch: Float32Array, f32: Float32Array | null): Float32Array {
  if (f32) return f32.subarray(r * w.cols, (r + 1) * w.cols);
  dequantizeRow(w.type, w.bytes, r * rowBytes(w.type, w.cols), w.cols, scratch, 0);
  return scratch;
}

function f32View(w: Weight): Float32Array | null {
  if (w.type !== GGMLType.F32 || w.bytes.byteOffset % 4 !== 0) return null;
  return new Float32Array(w.bytes.buffer, w.bytes.byteOffset, w.rows * w.cols);
}

/** Σ a[i] b[i] for n a multiple of 4 (every GGUF row length is). */
function dot(a: Float32Array, b: Float32Array, n: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (let c = 0; c < n; c += 4) {
    s0 += a[c] * b[c];
    s1 += a[c + 1] * b[c + 1];
    s2 += a[c + 2] * b[c + 2];
    s3 += a[c + 3] * b[c + 3];
  }
  return s0 + s1 + s2 + s3;
}

/** out[t, r] = Σ_c x[t, c] · W[r, c] */
export function matmul(x: Float32Array, w: Weight, T: number, out: Float32Array): void {
  const n = w.cols;
  const scratch = new Float32Array(n);
  const f32 = f32View(w);
  for (let r = 0; r < w.rows; r++) {
    const row = weightRow(w, r, scratch, f32);
    for (let t = 0; t < T; t++) out[t * w.rows + r] = dot(x.subarray(t * n, (t + 1) * n), row, n);
  }
}

/** out[t, :] = W[ids[t], :] */
export function getRows(w: Weight, ids: Int32Array, out: Float32Array): void {
  const n = w.cols;
  const scratch = new Float32Array(n);
  const f32 = f32View(w);
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t];
    if (!(id >= 0 && id < w.rows)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${w.rows - 1})`);
    out.set(weightRow(w, id, scratch, f32), t * n);
  }
}
