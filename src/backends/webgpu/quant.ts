// Reading stored weights inside the shaders. A weight stays in its GGUF storage type on the GPU:
// the file's bytes in a storage buffer `W: array<u32>`. Every kernel that reads weights calls
//   weight_at(row_byte, c): the value in column c of the row that starts at byte row_byte,
// defined below for each storage type by ggml's block layouts (the same formulas as
// src/quant/*.ts dequantize). Blocks are 18, 20, 22, 34, 84, 110, 136, 144, 176 or 210 bytes,
// so they are not word-aligned: bytes are read out of words; half-precision values (at even
// offsets) with unpack2x16float, which needs no shader-f16 feature.

import { GGMLType, typeName } from "../../io/gguf/types.js";

/** Byte access to W, shared by every type. */
const BYTES = /* wgsl */ `
fn byte_at(b: u32) -> u32 { return (W[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu; }
fn i8_at(b: u32) -> f32 { return f32(bitcast<i32>(byte_at(b) << 24u) >> 24u); }
fn half_at(b: u32) -> f32 { return unpack2x16float(W[b >> 2u] >> ((b & 2u) * 8u)).x; }
fn u16_at(b: u32) -> u32 { return (W[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu; }
`;

/** The 16 non-uniform levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl). */
const IQ4_LEVELS = /* wgsl */ `
const IQ4: array<f32, 16> = array<f32, 16>(-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                           1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
`;

/** The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block whose scales start at byte s. */
const K_SCALE_MIN = /* wgsl */ `
fn k_scale_min(s: u32, j: u32) -> vec2<f32> {
  if (j < 4u) { return vec2<f32>(f32(byte_at(s + j) & 63u), f32(byte_at(s + j + 4u) & 63u)); }
  let sc = (byte_at(s + j + 4u) & 0xfu) | ((byte_at(s + j - 4u) >> 6u) << 4u);
  let m = (byte_at(s + j + 4u) >> 4u) | ((byte_at(s + j) >> 6u) << 4u);
  return vec2<f32>(f32(sc), f32(m));
}
`;

/** weight_at for each type: block b = c / (values per block) at byte row_byte + b · (block bytes). */
const WEIGHT_AT: Record<number, string> = {
  [GGMLType.F32]: `fn weight_at(r: u32, c: u32) -> f32 { return bitcast<f32>(W[(r >> 2u) + c]); }`,
  [GGMLType.F16]: `fn weight_at(r: u32, c: u32) -> f32 { return half_at(r + 2u * c); }`,
  [GGMLType.BF16]: `fn weight_at(r: u32, c: u32) -> f32 { return bitcast<f32>(u16_at(r + 2u * c) << 16u); }`,
  // { half d; int8 q[32] }: d · q
  [GGMLType.Q8_0]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 32u) * 34u;
  return half_at(b) * i8_at(b + 2u + c % 32u);
}`,
  // { half d; u8 qs[16] }: value i < 16 is the low nibble of qs[i], i >= 16 the high one of qs[i-16]; d · (q − 8)
  [GGMLType.Q4_0]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 32u) * 18u; let i = c % 32u;
  let q = (byte_at(b + 2u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  return half_at(b) * (f32(q) - 8.0);
}`,
  // { half d, m; u8 qs[16] }: d · q + m
  [GGMLType.Q4_1]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 32u) * 20u; let i = c % 32u;
  let q = (byte_at(b + 4u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  return half_at(b) * f32(q) + half_at(b + 2u);
}`,
  // { half d; u32 qh; u8 qs[16] }: bit i of qh is the 5th bit of value i; d · (q − 16)
  [GGMLType.Q5_0]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 32u) * 22u; let i = c % 32u;
  let lo = (byte_at(b + 6u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  let hi = (byte_at(b + 2u + i / 8u) >> (i % 8u)) & 1u;
  return half_at(b) * (f32(lo | (hi << 4u)) - 16.0);
}`,
  // { half d, m; u32 qh; u8 qs[16] }: d · q + m
  [GGMLType.Q5_1]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 32u) * 24u; let i = c % 32u;
  let lo = (byte_at(b + 8u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  let hi = (byte_at(b + 4u + i / 8u) >> (i % 8u)) & 1u;
  return half_at(b) * f32(lo | (hi << 4u)) + half_at(b + 2u);
}`,
  // { u8 scales[16]; u8 qs[64]; half d, dmin } per 256: 2-bit q; scale byte: low nibble scale, high nibble min
  [GGMLType.Q2_K]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 256u) * 84u; let i = c % 256u;
  let h = i / 128u; let j = (i % 128u) / 32u; let l = i % 32u;
  let sc = byte_at(b + h * 8u + j * 2u + l / 16u);
  let q = (byte_at(b + 16u + h * 32u + l) >> (2u * j)) & 3u;
  return half_at(b + 80u) * f32(sc & 0xfu) * f32(q) - half_at(b + 82u) * f32(sc >> 4u);
}`,
  // { u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d } per 256: 2 low bits in qs, the 3rd (inverted) in hmask
  [GGMLType.Q3_K]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 256u) * 110u; let i = c % 256u;
  let h = i / 128u; let j = (i % 128u) / 32u; let l = i % 32u;
  let k = h * 8u + j * 2u + l / 16u;                         // which of 16 six-bit scales
  let s = b + 96u;
  let low = select(byte_at(s + k - 8u) >> 4u, byte_at(s + k) & 0xfu, k < 8u);
  let high = (byte_at(s + 8u + k % 4u) >> (2u * (k / 4u))) & 3u;
  let scale = f32(i32(low | (high << 4u)) - 32);
  let q = (byte_at(b + 32u + h * 32u + l) >> (2u * j)) & 3u;
  let hbit = (byte_at(b + l) >> (h * 4u + j)) & 1u;
  return half_at(b + 108u) * scale * (f32(q) - select(4.0, 0.0, hbit == 1u));
}`,
  // { half d, dmin; u8 scales[12]; u8 qs[128] } per 256: 8 sub-blocks of 32 with 6-bit scale and min
  [GGMLType.Q4_K]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 256u) * 144u; let i = c % 256u;
  let g = i / 64u; let hi = (i % 64u) / 32u; let l = i % 32u;
  let sm = k_scale_min(b + 4u, 2u * g + hi);
  let q = (byte_at(b + 16u + g * 32u + l) >> (4u * hi)) & 0xfu;
  return half_at(b) * sm.x * f32(q) - half_at(b + 2u) * sm.y;
}`,
  // { half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] } per 256: Q4_K with a 5th bit in qh
  [GGMLType.Q5_K]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 256u) * 176u; let i = c % 256u;
  let g = i / 64u; let hi = (i % 64u) / 32u; let l = i % 32u;
  let sm = k_scale_min(b + 4u, 2u * g + hi);
  let lo = (byte_at(b + 48u + g * 32u + l) >> (4u * hi)) & 0xfu;
  let h5 = (byte_at(b + 16u + l) >> (2u * g + hi)) & 1u;
  return half_at(b) * sm.x * f32(lo | (h5 << 4u)) - half_at(b + 2u) * sm.y;
}`,
  // { u8 ql[128]; u8 qh[64]; int8 scales[16]; half d } per 256: 6-bit q − 32, 16 scales
  [GGMLType.Q6_K]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 256u) * 210u; let i = c % 256u;
  let h = i / 128u; let k = (i % 128u) / 32u; let l = i % 32u;
  let lo = (byte_at(b + h * 64u + l + (k & 1u) * 32u) >> ((k / 2u) * 4u)) & 0xfu;
  let hi = (byte_at(b + 128u + h * 32u + l) >> (2u * k)) & 3u;
  let scale = i8_at(b + 192u + h * 8u + l / 16u + 2u * k);
  return half_at(b + 208u) * scale * (f32(lo | (hi << 4u)) - 32.0);
}`,
  // { half d; u8 qs[16] }: Q4_0's layout, the nibble indexes the IQ4 levels
  [GGMLType.IQ4_NL]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 32u) * 18u; let i = c % 32u;
  let q = (byte_at(b + 2u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  return half_at(b) * IQ4[q];
}`,
  // { half d; u16 scales_h; u8 scales_l[4]; u8 qs[128] } per 256: 8 sub-blocks of 32 with 6-bit scales − 32
  [GGMLType.IQ4_XS]: `fn weight_at(r: u32, c: u32) -> f32 {
  let b = r + (c / 256u) * 136u; let i = c % 256u;
  let ib = i / 32u; let j = i % 32u;
  let ls = ((byte_at(b + 4u + ib / 2u) >> (4u * (ib % 2u))) & 0xfu) | (((u16_at(b + 2u) >> (2u * ib)) & 3u) << 4u);
  let q = (byte_at(b + 8u + ib * 16u + j % 16u) >> ((j / 16u) * 4u)) & 0xfu;
  return half_at(b) * f32(i32(ls) - 32) * IQ4[q];
}`,
};

/** The storage types the shaders read. */
export const GPU_WEIGHT_TYPES: readonly number[] = Object.keys(WEIGHT_AT).map(Number);

export function supportsWeightType(type: number): boolean {
  return type in WEIGHT_AT;
}

/**
 * WGSL defining weight_at for `type` (the kernel declares W). With `buffer` ("W1", ...), the same
 * functions read that buffer instead, named with its suffix (weight_at_W1, byte_at_W1, ...), so a
 * kernel can read several weights; the IQ4 level table is then the caller's (iq4Levels).
 */
export function weightReader(type: number, buffer = "W"): string {
  const fn = WEIGHT_AT[type];
  if (!fn) throw new Error(`webgpu: no shader reads ${typeName(type)} weights`);
  const iq4 = type === GGMLType.IQ4_NL || type === GGMLType.IQ4_XS;
  const extra = type === GGMLType.Q4_K || type === GGMLType.Q5_K ? K_SCALE_MIN : "";
  const source = BYTES + extra + fn + "\n";
  if (buffer === "W") return (iq4 ? IQ4_LEVELS : "") + source;
  return source.replace(/\bW\[/g, `${buffer}[`).replace(/\b(byte_at|i8_at|half_at|u16_at|k_scale_min|weight_at)\(/g, `$1_${buffer}(`);
}

/** The IQ4 level table, for a kernel that reads IQ4 weights through named readers. */
export function iq4Levels(type: number): string {
  return type === GGMLType.IQ4_NL || type === GGMLType.IQ4_XS ? IQ4_LEVELS : "";
}
