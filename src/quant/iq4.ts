// The two non-linear 4-bit types of ggml: a 4-bit code is an index into a fixed 16-entry
// codebook, denser near zero (where most weights are), instead of an evenly spaced level.
//   IQ4_NL (18 bytes / 32 values)    d (f16) · qs[16]                 x = d · K[q]
//   IQ4_XS (136 bytes / 256 values)  d (f16) · scales_h (u16) · scales_l[4] · qs[128]
//                                    x = d · (ls − 32) · K[q], ls the 6-bit scale of each
//                                    32-value sub-block: low 4 bits in scales_l (two per byte),
//                                    high 2 bits in scales_h (bits 2·ib, 2·ib + 1)
// K = kvalues_iq4nl. In qs, byte j of a 32-value (sub-)block holds value j in its low nibble and
// value j + 16 in its high nibble, as the legacy types do.
//
// The quantizer is ggml's quantize_row_iq4_nl_impl (ggml-quants.c) as llama-quantize runs it:
// quantize_iq4_nl / quantize_iq4_xs with 7 extra scale trials each side, and, without an
// importance matrix, the weights x² (a large weight matters more). Every float step is rounded
// to float32 as C does (ggml-base is compiled without fused multiply–add), so the bytes match
// llama.cpp's.

import { F16_TABLE, writeF16 } from "./fp16.js";

const f = Math.fround;
const QK4_NL = 32;
const QK_K = 256;
const GROUP_MAX_EPS = f(1e-15);
/** Tries per side of the first scale guess (llama.cpp's ntry = 7 in quantize_iq4_nl/xs). */
const NTRY = 7;

/** kvalues_iq4nl: the codebook, int8 levels (the scale d maps them to weights). */
export const KVALUES_IQ4NL: Int8Array = Int8Array.from([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]);
const K = KVALUES_IQ4NL;

function half(src: Uint8Array, o: number): number {
  return F16_TABLE[src[o] | (src[o + 1] << 8)];
}

/** ggml's nearest_int: to the nearest integer, ties to even (1.5·2^23 leaves no fraction bits). */
function nearestInt(v: number): number {
  return f(v + 12582912) - 12582912;
}

/** ggml's best_index_int8: the codebook index nearest to x (a float32), the lower one on ties. */
function bestIndex(x: number): number {
  if (x <= K[0]) return 0;
  if (x >= K[15]) return 15;
  let ml = 0, mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < K[mav]) mu = mav; else ml = mav;
  }
  return f(x - K[mu - 1]) < f(K[mu] - x) ? mu - 1 : mu;
}

// ---------------------------------------------------------------------------------------------
// dequantization

export function dequantizeIQ4_NL(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK4_NL, o += 18, p += QK4_NL) {
    const d = half(src, o);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j];
      out[p + j] = d * K[q & 15];
      out[p + j + 16] = d * K[q >> 4];
    }
  }
}

/** The 6-bit scale of sub-block ib (0..7) of the IQ4_XS super-block at byte o, before the −32. */
function scaleXS(src: Uint8Array, o: number, ib: number): number {
  const scalesH = src[o + 2] | (src[o + 3] << 8);
  return ((src[o + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 15) | (((scalesH >> (2 * ib)) & 3) << 4);
}

export function dequantizeIQ4_XS(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 136) {
    const d = half(src, o);
    for (let ib = 0; ib < 8; ib++, p += 32) {
      const dl = f(d * (scaleXS(src, o, ib) - 32));
      const qs = o + 8 + 16 * ib;
      for (let j = 0; j < 16; j++) {
        const q = src[qs + j];
        out[p + j] = f(dl * K[q & 15]);
        out[p + j + 16] = f(dl * K[q >> 4]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// quantization

const weight = new Float32Array(32);

/**
 * The best scale for the 32 values x[p, p+32) (weights x²), and their codes in L[lo, lo+32):
 * a first guess maps the extreme value to K[0] = −127, then 2·NTRY + 1 scales around it are
 * tried, each with codes chosen as the nearest level; the one with the least weighted squared
 * error wins (closed form: d = Σwqx / Σwq², error ∝ −(Σwqx)²/Σwq²). 0 for an all-zero block.
 */
function bestScale(x: Float32Array, p: number, L: Uint8Array, lo: number): number {
  let amax = 0, max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[p + j];
    weight[j] = f(v * v);
    const ax = Math.abs(v);
    if (ax > amax) {
      amax = ax;
      max = v;
    }
  }
  if (amax < GROUP_MAX_EPS) return 0;
  let d = f(-max / K[0]);
  let id = f(1 / d);
  let sumqx = 0, sumq2 = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[p + j];
    const l = bestIndex(f(id * v));
    L[lo + j] = l;
    const q = K[l], wq = f(weight[j] * q);
    sumqx = f(sumqx + f(wq * v));
    sumq2 = f(sumq2 + f(wq * q));
  }
  d = sumq2 > 0 ? f(sumqx / sumq2) : 0;
  let best = f(d * sumqx);
  for (let itry = -NTRY; itry <= NTRY; itry++) {
    id = f((itry + K[0]) / max);
    sumqx = 0;
    sumq2 = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[p + j];
      const q = K[bestIndex(f(id * v))], wq = f(weight[j] * q);
      sumqx = f(sumqx + f(wq * v));
      sumq2 = f(sumq2 + f(wq * q));
    }
    if (sumq2 > 0 && f(sumqx * sumqx) > f(best * sumq2)) {
      d = f(sumqx / sumq2);
      best = f(d * sumqx);
    }
  }
  return d;
}

/** Nibble-packs codes L[lo, lo+32) into dst[o, o+16): value j low, value j + 16 high. */
function pack(L: Uint8Array, lo: number, dst: Uint8Array, o: number): void {
  for (let j = 0; j < 16; j++) dst[o + j] = L[lo + j] | (L[lo + 16 + j] << 4);
}

const codes = new Uint8Array(QK_K);

export function quantizeIQ4_NL(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK4_NL, p += QK4_NL, o += 18) {
    const d = bestScale(x, p, codes, 0);
    writeF16(dst, o, d);
    // the codes again for the chosen scale (the float one: the f16 rounding comes after)
    const id = d ? f(1 / d) : 0;
    for (let j = 0; j < 32; j++) codes[j] = bestIndex(f(id * x[p + j]));
    pack(codes, 0, dst, o + 2);
  }
}

const scales = new Float32Array(8);

export function quantizeIQ4_XS(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK_K, p += QK_K, o += 136) {
    let maxScale = 0, amaxScale = 0;
    for (let ib = 0; ib < 8; ib++) {
      const s = bestScale(x, p + 32 * ib, codes, 32 * ib);
      scales[ib] = s;
      if (Math.abs(s) > amaxScale) {
        amaxScale = Math.abs(s);
        maxScale = s;
      }
    }
    // one f16 super-scale; each sub-block's scale becomes a 6-bit multiple of it, l in −32..31,
    // and its codes are chosen again for that rounded scale
    const d = f(-maxScale / 32);
    writeF16(dst, o, d);
    const id = d ? f(1 / d) : 0;
    let scalesH = 0;
    for (let ib = 0; ib < 8; ib++) {
      const l = Math.max(-32, Math.min(31, nearestInt(f(id * scales[ib]))));
      const dl = f(d * l);
      const idl = dl ? f(1 / dl) : 0;
      for (let j = 0; j < 32; j++) codes[32 * ib + j] = bestIndex(f(idl * x[p + 32 * ib + j]));
      const ls = l + 32;
      if (ib % 2 === 0) dst[o + 4 + (ib >> 1)] = ls & 15;
      else dst[o + 4 + (ib >> 1)] |= (ls & 15) << 4;
      scalesH |= (ls >> 4) << (2 * ib);
    }
    dst[o + 2] = scalesH & 0xff;
    dst[o + 3] = scalesH >> 8;
    for (let ib = 0; ib < 8; ib++) pack(codes, 32 * ib, dst, o + 8 + 16 * ib);
  }
}
