// The float storage types: F32, F16 and BF16, one value per "block", little-endian.

import { F16_TABLE, f32ToBF16, f32ToF16 } from "./fp16.js";

export function dequantizeF32(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  const at = src.byteOffset + o;
  if ((at & 3) === 0) {
    out.set(new Float32Array(src.buffer, at, n), p);
    return;
  }
  const view = new DataView(src.buffer, at, n * 4);
  for (let i = 0; i < n; i++) out[p + i] = view.getFloat32(4 * i, true);
}

export function dequantizeF16(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let i = 0; i < n; i++, o += 2) out[p + i] = F16_TABLE[src[o] | (src[o + 1] << 8)];
}

const BF16_BITS = new Uint32Array(1);
const BF16_VALUE = new Float32Array(BF16_BITS.buffer);

export function dequantizeBF16(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  const at = src.byteOffset + o;
  if ((at & 1) === 0) {
    // bf16 is the top half of a float32: widen through an integer view, no per-value arithmetic
    const h = new Uint16Array(src.buffer, at, n);
    const bits = new Uint32Array(out.buffer, out.byteOffset + 4 * p, n);
    for (let i = 0; i < n; i++) bits[i] = h[i] << 16;
    return;
  }
  for (let i = 0; i < n; i++, o += 2) {
    BF16_BITS[0] = (src[o] | (src[o + 1] << 8)) << 16;
    out[p + i] = BF16_VALUE[0];
  }
}

export function quantizeF32(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  dst.set(new Uint8Array(x.buffer, x.byteOffset + 4 * p, 4 * n), o);
}

export function quantizeF16(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let i = 0; i < n; i++, o += 2) {
    const h = f32ToF16(x[p + i]);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
  }
}

export function quantizeBF16(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let i = 0; i < n; i++, o += 2) {
    const h = f32ToBF16(x[p + i]);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
  }
}
