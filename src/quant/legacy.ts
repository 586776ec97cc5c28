// The legacy block types: 32 values per block, one f16 scale d (and a minimum m for the _1 types).
//   Q4_0  d, qs[16]          x = d·(q − 8),  q in 0..15
//   Q4_1  d, m, qs[16]       x = d·q + m,    q in 0..15
//   Q5_0  d, qh[4], qs[16]   x = d·(q − 16), q in 0..31 (low nibble in qs, fifth bit in qh)
//   Q5_1  d, m, qh[4], qs[16]
//   Q8_0  d, qs[32] (int8)   x = d·q
//   Q8_1  d, s, qs[32]       s = d·Σq (used by dot products)
// In qs, byte j holds value j in its low nibble and value j + 16 in its high nibble.
// The quantizers are ggml's quantize_row_*_ref, with every step rounded to float32 (Math.fround)
// so that the bytes match llama.cpp's.

import { F16_TABLE, writeF16 } from "./fp16.js";

const f = Math.fround;
const QK = 32;

function half(src: Uint8Array, o: number): number {
  return F16_TABLE[src[o] | (src[o + 1] << 8)];
}

function u32le(src: Uint8Array, o: number): number {
  return (src[o] | (src[o + 1] << 8) | (src[o + 2] << 16) | (src[o + 3] << 24)) >>> 0;
}

function writeU32le(dst: Uint8Array, o: number, v: number): void {
  dst[o] = v & 0xff;
  dst[o + 1] = (v >>> 8) & 0xff;
  dst[o + 2] = (v >>> 16) & 0xff;
  dst[o + 3] = v >>> 24;
}

// ---------------------------------------------------------------------------------------------
// dequantization

export function dequantizeQ4_0(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK, o += 18, p += QK) {
    const d = half(src, o);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j];
      out[p + j] = ((q & 15) - 8) * d;
      out[p + j + 16] = ((q >> 4) - 8) * d;
    }
  }
}

export function dequantizeQ4_1(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK, o += 20, p += QK) {
    const d = half(src, o);
    const m = half(src, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 4 + j];
      out[p + j] = f((q & 15) * d) + m;
      out[p + j + 16] = f((q >> 4) * d) + m;
    }
  }
}

export function dequantizeQ5_0(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK, o += 22, p += QK) {
    const d = half(src, o);
    const qh = u32le(src, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 6 + j];
      const hi0 = ((qh >>> j) << 4) & 0x10;
      const hi1 = (qh >>> (j + 12)) & 0x10;
      out[p + j] = (((q & 15) | hi0) - 16) * d;
      out[p + j + 16] = (((q >> 4) | hi1) - 16) * d;
    }
  }
}

export function dequantizeQ5_1(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK, o += 24, p += QK) {
    const d = half(src, o);
    const m = half(src, o + 2);
    const qh = u32le(src, o + 4);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 8 + j];
      const hi0 = ((qh >>> j) << 4) & 0x10;
      const hi1 = (qh >>> (j + 12)) & 0x10;
      out[p + j] = f(((q & 15) | hi0) * d) + m;
      out[p + j + 16] = f(((q >> 4) | hi1) * d) + m;
    }
  }
}

export function dequantizeQ8_0(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK, o += 34, p += QK) {
    const d = half(src, o);
    for (let j = 0; j < QK; j++) out[p + j] = ((src[o + 2 + j] << 24) >> 24) * d;
  }
}

export function dequantizeQ8_1(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK, o += 36, p += QK) {
    const d = half(src, o);
    for (let j = 0; j < QK; j++) out[p + j] = ((src[o + 4 + j] << 24) >> 24) * d;
  }
}

// ---------------------------------------------------------------------------------------------
// quantization (reference: deterministic, no importance matrix)

/** The value of largest magnitude in x[p, p+32), keeping its sign (the first one on ties). */
function signedAbsMax(x: Float32Array, p: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < QK; j++) {
    const v = x[p + j];
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

/** Min and max of x[p, p+32). */
function minMax(x: Float32Array, p: number): [number, number] {
  let min = 3.4028234663852886e38;
  let max = -3.4028234663852886e38;
  for (let j = 0; j < QK; j++) {
    const v = x[p + j];
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return [min, max];
}

/** C's float → int8_t conversion (truncation toward zero), for the ranges these quantizers see. */
function toInt8(v: number): number {
  return (Math.trunc(v) << 24) >> 24;
}

export function quantizeQ4_0(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK, p += QK, o += 18) {
    // d = max / −8 maps the extreme value to q = 0 exactly; the others round to nearest
    const d = f(signedAbsMax(x, p) / -8);
    const id = d ? f(1 / d) : 0;
    writeF16(dst, o, d);
    for (let j = 0; j < 16; j++) {
      const x0 = f(x[p + j] * id);
      const x1 = f(x[p + j + 16] * id);
      const q0 = Math.min(15, toInt8(f(x0 + 8.5)));
      const q1 = Math.min(15, toInt8(f(x1 + 8.5)));
      dst[o + 2 + j] = (q0 | (q1 << 4)) & 0xff;
    }
  }
}

export function quantizeQ4_1(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK, p += QK, o += 20) {
    const [min, max] = minMax(x, p);
    const d = f(f(max - min) / 15);
    const id = d ? f(1 / d) : 0;
    writeF16(dst, o, d);
    writeF16(dst, o + 2, min);
    for (let j = 0; j < 16; j++) {
      const x0 = f(f(x[p + j] - min) * id);
      const x1 = f(f(x[p + j + 16] - min) * id);
      const q0 = Math.min(15, toInt8(f(x0 + 0.5)));
      const q1 = Math.min(15, toInt8(f(x1 + 0.5)));
      dst[o + 4 + j] = (q0 | (q1 << 4)) & 0xff;
    }
  }
}

export function quantizeQ5_0(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK, p += QK, o += 22) {
    const d = f(signedAbsMax(x, p) / -16);
    const id = d ? f(1 / d) : 0;
    writeF16(dst, o, d);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = f(x[p + j] * id);
      const x1 = f(x[p + j + 16] * id);
      const q0 = Math.min(31, toInt8(f(x0 + 16.5))) & 0xff;
      const q1 = Math.min(31, toInt8(f(x1 + 16.5))) & 0xff;
      dst[o + 6 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 & 0x10) >> 4) << j;
      qh |= ((q1 & 0x10) >> 4) << (j + 16);
    }
    writeU32le(dst, o + 2, qh >>> 0);
  }
}

export function quantizeQ5_1(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK, p += QK, o += 24) {
    const [min, max] = minMax(x, p);
    const d = f(f(max - min) / 31);
    const id = d ? f(1 / d) : 0;
    writeF16(dst, o, d);
    writeF16(dst, o + 2, min);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = f(f(x[p + j] - min) * id);
      const x1 = f(f(x[p + j + 16] - min) * id);
      const q0 = Math.trunc(f(x0 + 0.5)) & 0xff; // ggml: (uint8_t)(x0 + 0.5f), no clamp
      const q1 = Math.trunc(f(x1 + 0.5)) & 0xff;
      dst[o + 8 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 & 0x10) >> 4) << j;
      qh |= ((q1 & 0x10) >> 4) << (j + 16);
    }
    writeU32le(dst, o + 4, qh >>> 0);
  }
}

/** C's roundf: to nearest, halves away from zero. */
function roundAway(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}

function absMax(x: Float32Array, p: number): number {
  let amax = 0;
  for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[p + j]));
  return amax;
}

export function quantizeQ8_0(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK, p += QK, o += 34) {
    const d = f(absMax(x, p) / 127);
    const id = d ? f(1 / d) : 0;
    writeF16(dst, o, d);
    for (let j = 0; j < QK; j++) dst[o + 2 + j] = roundAway(f(x[p + j] * id)) & 0xff;
  }
}

export function quantizeQ8_1(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK, p += QK, o += 36) {
    const d = f(absMax(x, p) / 127);
    const id = d ? f(1 / d) : 0;
    writeF16(dst, o, d);
    let sum = 0;
    for (let j = 0; j < QK; j++) {
      const q = roundAway(f(x[p + j] * id));
      dst[o + 4 + j] = q & 0xff;
      sum += q;
    }
    writeF16(dst, o + 2, f(sum * d));
  }
}
