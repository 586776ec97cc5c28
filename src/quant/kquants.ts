// The K-quants: super-blocks of QK_K = 256 values, split into sub-blocks that each carry a small
// integer scale (and, for the "x = d·q − m" types, a small integer minimum), themselves scaled by
// the super-block's f16 d (and dmin). Byte layouts, after ggml-common.h:
//   Q2_K (84)   scales[16] (low nibble scale, high nibble min) · qs[64] (2 bits) · d · dmin
//   Q3_K (110)  hmask[32] (third bit) · qs[64] (2 low bits) · scales[12] (16 × 6 bits) · d
//   Q4_K (144)  d · dmin · scales[12] (8 scales + 8 mins, 6 bits) · qs[128] (4 bits)
//   Q5_K (176)  d · dmin · scales[12] · qh[32] (fifth bit) · qs[128] (4 low bits)
//   Q6_K (210)  ql[128] (4 low bits) · qh[64] (2 high bits) · scales[16] (int8) · d
//   Q8_K (292)  d (f32) · qs[256] (int8) · bsums[16] (int16)
// The quantizers are ggml's quantize_row_*_ref (make_qkx2_quants, make_q3_quants,
// make_qx_quants), every float step rounded to float32 as C does, so the bytes match llama.cpp's.

import { F16_TABLE, f32FromBits, writeF16 } from "./fp16.js";

const f = Math.fround;
const QK_K = 256;
const GROUP_MAX_EPS = f(1e-15);
const TENTH = f(0.1);

function half(src: Uint8Array, o: number): number {
  return F16_TABLE[src[o] | (src[o + 1] << 8)];
}

const int8 = (b: number) => (b << 24) >> 24;

/**
 * ggml's nearest_int: round a float32 to the nearest integer, ties to even, by the same trick:
 * adding 1.5·2^23 leaves no fraction bits in a float32. (The sum is exact in float64 whenever
 * |v| ≥ 2^-6, the only range where a tie can occur, so rounding it once to float32 is exact.)
 */
function nearestInt(v: number): number {
  return Math.fround(v + 12582912) - 12582912;
}

const clamp = (v: number, lo: number, hi: number) => (v < lo ? lo : v > hi ? hi : v);

/** Scale j and min j of the 12 packed bytes of Q4_K / Q5_K (ggml's get_scale_min_k4). */
function scaleK4(s: Uint8Array, o: number, j: number): number {
  return j < 4 ? s[o + j] & 63 : (s[o + j + 4] & 0xf) | ((s[o + j - 4] >> 6) << 4);
}
function minK4(s: Uint8Array, o: number, j: number): number {
  return j < 4 ? s[o + j + 4] & 63 : (s[o + j + 4] >> 4) | ((s[o + j] >> 6) << 4);
}

/** Scale j (0..63, before the −32 offset) of the 12 packed bytes of Q3_K. */
function scaleQ3(s: Uint8Array, o: number, j: number): number {
  const low = j < 8 ? s[o + j] & 0xf : s[o + j - 8] >> 4;
  const high = (s[o + 8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return low | (high << 4);
}

// ---------------------------------------------------------------------------------------------
// dequantization

const subScale = new Float32Array(16);
const subMin = new Float32Array(16);

export function dequantizeQ2_K(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 84) {
    const d = half(src, o + 80);
    const dmin = half(src, o + 82);
    for (let j = 0; j < 16; j++) {
      const sc = src[o + j];
      subScale[j] = d * (sc & 0xf);
      subMin[j] = dmin * (sc >> 4);
    }
    // 128 values per 32 bytes of qs: four 2-bit planes, each plane two sub-blocks of 16
    for (let half128 = 0, is = 0; half128 < 2; half128++) {
      const q = o + 16 + 32 * half128;
      for (let shift = 0; shift < 8; shift += 2, is += 2) {
        const dl0 = subScale[is], ml0 = subMin[is], dl1 = subScale[is + 1], ml1 = subMin[is + 1];
        for (let l = 0; l < 16; l++) out[p + l] = f(dl0 * ((src[q + l] >> shift) & 3)) - ml0;
        for (let l = 0; l < 16; l++) out[p + 16 + l] = f(dl1 * ((src[q + 16 + l] >> shift) & 3)) - ml1;
        p += 32;
      }
    }
  }
}

export function dequantizeQ3_K(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 110) {
    const d = half(src, o + 108);
    for (let j = 0; j < 16; j++) subScale[j] = d * (scaleQ3(src, o + 96, j) - 32);
    const hm = o;
    for (let half128 = 0, is = 0, m = 1; half128 < 2; half128++) {
      const q = o + 32 + 32 * half128;
      for (let shift = 0; shift < 8; shift += 2, is += 2, m <<= 1) {
        const dl0 = subScale[is], dl1 = subScale[is + 1];
        for (let l = 0; l < 16; l++) {
          out[p + l] = dl0 * (((src[q + l] >> shift) & 3) - (src[hm + l] & m ? 0 : 4));
        }
        for (let l = 0; l < 16; l++) {
          out[p + 16 + l] = dl1 * (((src[q + 16 + l] >> shift) & 3) - (src[hm + 16 + l] & m ? 0 : 4));
        }
        p += 32;
      }
    }
  }
}

export function dequantizeQ4_K(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 144) {
    const d = half(src, o);
    const dmin = half(src, o + 2);
    // 64 values per 32 bytes: low nibbles are sub-block 2k, high nibbles sub-block 2k+1
    for (let k = 0; k < 4; k++) {
      const q = o + 16 + 32 * k;
      const d1 = f(d * scaleK4(src, o + 4, 2 * k)), m1 = f(dmin * minK4(src, o + 4, 2 * k));
      const d2 = f(d * scaleK4(src, o + 4, 2 * k + 1)), m2 = f(dmin * minK4(src, o + 4, 2 * k + 1));
      for (let l = 0; l < 32; l++) out[p + l] = f(d1 * (src[q + l] & 0xf)) - m1;
      for (let l = 0; l < 32; l++) out[p + 32 + l] = f(d2 * (src[q + l] >> 4)) - m2;
      p += 64;
    }
  }
}

export function dequantizeQ5_K(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 176) {
    const d = half(src, o);
    const dmin = half(src, o + 2);
    const qh = o + 16;
    // sub-block 2k takes its fifth bits from bit 2k of qh, sub-block 2k+1 from bit 2k+1
    for (let k = 0; k < 4; k++) {
      const ql = o + 48 + 32 * k;
      const d1 = f(d * scaleK4(src, o + 4, 2 * k)), m1 = f(dmin * minK4(src, o + 4, 2 * k));
      const d2 = f(d * scaleK4(src, o + 4, 2 * k + 1)), m2 = f(dmin * minK4(src, o + 4, 2 * k + 1));
      const s1 = 2 * k, s2 = 2 * k + 1;
      for (let l = 0; l < 32; l++) out[p + l] = f(d1 * ((src[ql + l] & 0xf) | (((src[qh + l] >> s1) & 1) << 4))) - m1;
      for (let l = 0; l < 32; l++) out[p + 32 + l] = f(d2 * ((src[ql + l] >> 4) | (((src[qh + l] >> s2) & 1) << 4))) - m2;
      p += 64;
    }
  }
}

export function dequantizeQ6_K(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 210) {
    const d = half(src, o + 208);
    for (let j = 0; j < 16; j++) subScale[j] = d * int8(src[o + 192 + j]);
    // 128 values per 64 bytes of ql and 32 of qh; value l + 32·i takes plane i of byte l
    for (let h = 0; h < 2; h++) {
      const ql = o + 64 * h;
      const qh = o + 128 + 32 * h;
      const s = 8 * h;
      for (let l = 0; l < 32; l++) {
        const is = s + (l >> 4);
        const lo = src[ql + l], lo2 = src[ql + 32 + l], hi = src[qh + l];
        out[p + l] = subScale[is] * (((lo & 0xf) | ((hi & 3) << 4)) - 32);
        out[p + 32 + l] = subScale[is + 2] * (((lo2 & 0xf) | (((hi >> 2) & 3) << 4)) - 32);
        out[p + 64 + l] = subScale[is + 4] * (((lo >> 4) | (((hi >> 4) & 3) << 4)) - 32);
        out[p + 96 + l] = subScale[is + 6] * (((lo2 >> 4) | (((hi >> 6) & 3) << 4)) - 32);
      }
      p += 128;
    }
  }
}

export function dequantizeQ8_K(src: Uint8Array, o: number, n: number, out: Float32Array, p: number): void {
  for (let b = 0; b < n; b += QK_K, o += 292, p += QK_K) {
    const d = f32FromBits(src[o] | (src[o + 1] << 8) | (src[o + 2] << 16) | (src[o + 3] << 24));
    for (let j = 0; j < QK_K; j++) out[p + j] = int8(src[o + 4 + j]) * d;
  }
}

// ---------------------------------------------------------------------------------------------
// the fits ggml uses to choose levels and scales

const L = new Int32Array(QK_K); // the chosen level of each value of a super-block
const Laux = new Int32Array(32);
const shifted = new Float32Array(32); // x − min, as float32
const weights = new Float32Array(32);
const scales = new Float32Array(16);
const mins = new Float32Array(16);

/** The minimum found by the last makeQkx2Quants (as a positive offset: x ≈ scale·L − min). */
let fittedMin = 0;

/**
 * ggml's make_qkx2_quants: fit x[xo, xo+n) ≈ scale·L + min with L in 0..nmax and min ≤ 0,
 * minimizing the weighted squared (or absolute, useMad) error over a sweep of nstep+1 trial
 * scales around nmax/(max−min); each trial's scale and min are the weighted least-squares fit.
 * Levels go to L[lo, lo+n); returns the scale and leaves −min in fittedMin.
 */
function makeQkx2Quants(n: number, nmax: number, x: Float32Array, xo: number, lo: number,
                        rmin: number, rdelta: number, nstep: number, useMad: boolean): number {
  let min = x[xo], max = x[xo];
  let sumW = weights[0];
  let sumX = f(sumW * x[xo]);
  for (let i = 1; i < n; i++) {
    const v = x[xo + i];
    if (v < min) min = v;
    if (v > max) max = v;
    sumW = f(sumW + weights[i]);
    sumX = f(sumX + f(weights[i] * v));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, lo, lo + n);
    fittedMin = -min;
    return 0;
  }
  let iscale = f(nmax / f(max - min));
  let scale = f(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const l = clamp(nearestInt(f(iscale * f(x[xo + i] - min))), 0, nmax);
    L[lo + i] = l;
    let diff = f(f(f(scale * l) + min) - x[xo + i]);
    diff = useMad ? Math.abs(diff) : f(diff * diff);
    bestError = f(bestError + f(weights[i] * diff));
  }
  if (nstep < 1) {
    fittedMin = -min;
    return scale;
  }
  for (let i = 0; i < n; i++) shifted[i] = x[xo + i] - min;
  for (let is = 0; is <= nstep; is++) {
    // as in ggml, each trial starts from the best min found so far
    iscale = f(f(f(rmin + f(rdelta * is)) + nmax) / f(max - min));
    let sumL = 0, sumL2 = 0, sumXL = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(f(iscale * shifted[i])), 0, nmax);
      Laux[i] = l;
      const wl = f(weights[i] * l);
      sumL = f(sumL + wl);
      sumL2 = f(sumL2 + f(wl * l));
      sumXL = f(sumXL + f(wl * x[xo + i]));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (D > 0) {
      let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
      let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = f(sumXL / sumL2);
      }
      let curError = 0;
      for (let i = 0; i < n; i++) {
        let diff = f(f(f(thisScale * Laux[i]) + thisMin) - x[xo + i]);
        diff = useMad ? Math.abs(diff) : f(diff * diff);
        curError = f(curError + f(weights[i] * diff));
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i];
        bestError = curError;
        scale = thisScale;
        min = thisMin;
        for (let i = 0; i < n; i++) shifted[i] = x[xo + i] - min;
      }
    }
  }
  fittedMin = -min;
  return scale;
}

/** The value of largest magnitude in x[xo, xo+n), with its sign. */
function signedAbsMax(x: Float32Array, xo: number, n: number): number {
  let amax = 0, max = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i];
    }
  }
  return max;
}

/**
 * ggml's make_qx_quants with rmse_type 1 and no importance: symmetric levels −nmax..nmax−1
 * (stored +nmax in L), weights x², trying 19 scales around −nmax/max and keeping the one whose
 * least-squares scale explains most of Σw·x². Returns the scale.
 */
function makeQxQuants(n: number, nmax: number, x: Float32Array, xo: number, lo: number): number {
  const max = signedAbsMax(x, xo, n);
  if (Math.abs(max) < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  let iscale = f(-nmax / max);
  let sumlx = 0, suml2 = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xo + i];
    const l = clamp(nearestInt(f(iscale * v)), -nmax, nmax - 1);
    L[lo + i] = l + nmax;
    const w = f(v * v);
    sumlx = f(sumlx + f(f(w * v) * l));
    suml2 = f(suml2 + f(f(w * l) * l));
  }
  let scale = suml2 ? f(sumlx / suml2) : 0;
  let best = f(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = f(-f(nmax + f(TENTH * is)) / max);
    sumlx = suml2 = 0;
    for (let i = 0; i < n; i++) {
      const v = x[xo + i];
      const l = clamp(nearestInt(f(iscale * v)), -nmax, nmax - 1);
      const w = f(v * v);
      sumlx = f(sumlx + f(f(w * v) * l));
      suml2 = f(suml2 + f(f(w * l) * l));
    }
    if (suml2 > 0 && f(sumlx * sumlx) > f(best * suml2)) {
      for (let i = 0; i < n; i++) L[lo + i] = nmax + clamp(nearestInt(f(iscale * x[xo + i])), -nmax, nmax - 1);
      scale = f(sumlx / suml2);
      best = f(scale * sumlx);
    }
  }
  return scale;
}

/**
 * ggml's make_q3_quants with rmse: levels −nmax..nmax−1 from −nmax/max, then up to five passes
 * that move single values to the level that most improves the x²-weighted least-squares fit.
 * Levels go to L[lo, lo+n) offset by +nmax; returns the scale.
 */
function makeQ3Quants(n: number, nmax: number, x: Float32Array, xo: number, lo: number): number {
  const max = signedAbsMax(x, xo, n);
  if (Math.abs(max) < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  const iscale = f(-nmax / max);
  let sumlx = 0, suml2 = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xo + i];
    const l = clamp(nearestInt(f(iscale * v)), -nmax, nmax - 1);
    L[lo + i] = l;
    const w = f(v * v);
    sumlx = f(sumlx + f(f(w * v) * l));
    suml2 = f(suml2 + f(f(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const v = x[xo + i];
      const w = f(v * v);
      const li = L[lo + i];
      let slx = f(sumlx - f(f(w * v) * li));
      if (slx > 0) {
        let sl2 = f(suml2 - f(f(w * li) * li));
        const newL = clamp(nearestInt(f(f(v * sl2) / slx)), -nmax, nmax - 1);
        if (newL !== li) {
          slx = f(slx + f(f(w * v) * newL));
          sl2 = f(sl2 + f(f(w * newL) * newL));
          if (sl2 > 0 && f(f(slx * slx) * suml2) > f(f(sumlx * sumlx) * sl2)) {
            L[lo + i] = newL;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] += nmax;
  return suml2 > 0 ? f(sumlx / suml2) : 0;
}

/** Pack 256 2-bit levels: byte l of each 32-byte group holds values l, l+32, l+64, l+96. */
function pack2Bits(dst: Uint8Array, o: number): void {
  for (let j = 0; j < QK_K; j += 128) {
    for (let l = 0; l < 32; l++) {
      dst[o + j / 4 + l] = L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
    }
  }
}

/** Write the 8 six-bit scales and mins of Q4_K / Q5_K into 12 bytes. */
function packScalesK4(dst: Uint8Array, o: number, ls: Int32Array, lm: Int32Array): void {
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      dst[o + j] = ls[j];
      dst[o + j + 4] = lm[j];
    } else {
      dst[o + j + 4] = (ls[j] & 0xf) | ((lm[j] & 0xf) << 4);
      dst[o + j - 4] |= (ls[j] >> 4) << 6;
      dst[o + j] |= (lm[j] >> 4) << 6;
    }
  }
}

const levelScale = new Int32Array(8);
const levelMin = new Int32Array(8);

// ---------------------------------------------------------------------------------------------
// quantization (reference: deterministic, no importance matrix)

export function quantizeQ2_K(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK_K, p += QK_K, o += 84) {
    let maxScale = 0, maxMin = 0;
    for (let j = 0; j < 16; j++) {
      for (let l = 0; l < 16; l++) weights[l] = Math.abs(x[p + 16 * j + l]);
      scales[j] = makeQkx2Quants(16, 3, x, p + 16 * j, 16 * j, -0.5, TENTH, 15, true);
      mins[j] = fittedMin;
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    // the sub-block scales and mins, as 4-bit multiples of d and dmin
    if (maxScale > 0) {
      const iscale = f(15 / maxScale);
      for (let j = 0; j < 16; j++) dst[o + j] = nearestInt(f(iscale * scales[j]));
      writeF16(dst, o + 80, f(maxScale / 15));
    } else {
      for (let j = 0; j < 16; j++) dst[o + j] = 0;
      writeF16(dst, o + 80, 0);
    }
    if (maxMin > 0) {
      const iscale = f(15 / maxMin);
      for (let j = 0; j < 16; j++) dst[o + j] |= nearestInt(f(iscale * mins[j])) << 4;
      writeF16(dst, o + 82, f(maxMin / 15));
    } else {
      writeF16(dst, o + 82, 0);
    }
    // requantize every value against the scales as stored
    const d = half(dst, o + 80), dmin = half(dst, o + 82);
    for (let j = 0; j < 16; j++) {
      const dl = f(d * (dst[o + j] & 0xf));
      if (!dl) continue;
      const ml = f(dmin * (dst[o + j] >> 4));
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(f(f(x[p + 16 * j + ii] + ml) / dl)), 0, 3);
      }
    }
    pack2Bits(dst, o + 16);
  }
}

export function quantizeQ3_K(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK_K, p += QK_K, o += 110) {
    let maxScale = 0, amax = 0;
    for (let j = 0; j < 16; j++) {
      scales[j] = makeQ3Quants(16, 4, x, p + 16 * j, 16 * j);
      const a = Math.abs(scales[j]);
      if (a > amax) {
        amax = a;
        maxScale = scales[j];
      }
    }
    // 16 six-bit scales, offset by 32: low nibbles in bytes 0..7, two high bits each in 8..11
    const s = o + 96;
    dst.fill(0, s, s + 12);
    if (maxScale) {
      const iscale = f(-32 / maxScale);
      for (let j = 0; j < 16; j++) {
        const l = clamp(int8(nearestInt(f(iscale * scales[j]))), -32, 31) + 32;
        if (j < 8) dst[s + j] = l & 0xf;
        else dst[s + j - 8] |= (l & 0xf) << 4;
        dst[s + 8 + (j & 3)] |= (l >> 4) << (2 * (j >> 2));
      }
      writeF16(dst, o + 108, f(1 / iscale));
    } else {
      writeF16(dst, o + 108, 0);
    }
    const d = half(dst, o + 108);
    for (let j = 0; j < 16; j++) {
      const dl = f(d * (scaleQ3(dst, s, j) - 32));
      if (!dl) continue;
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(f(x[p + 16 * j + ii] / dl)), -4, 3) + 4;
      }
    }
    // the third bit of value j goes to bit (j / 32) of hmask[j % 32]
    dst.fill(0, o, o + 32);
    for (let j = 0; j < QK_K; j++) {
      if (L[j] > 3) {
        dst[o + (j & 31)] |= 1 << (j >> 5);
        L[j] -= 4;
      }
    }
    pack2Bits(dst, o + 32);
  }
}

/** Q4_K and Q5_K share everything but the level count and the fit's sweep. */
function quantizeK4(x: Float32Array, p: number, dst: Uint8Array, o: number, nmax: number,
                    rmin: number, nstep: number): void {
  let maxScale = 0, maxMin = 0;
  for (let j = 0; j < 8; j++) {
    const xo = p + 32 * j;
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) sumX2 = f(sumX2 + f(x[xo + l] * x[xo + l]));
    const avX = f(Math.sqrt(f(sumX2 / 32)));
    for (let l = 0; l < 32; l++) weights[l] = avX + Math.abs(x[xo + l]);
    scales[j] = makeQkx2Quants(32, nmax, x, xo, 32 * j, rmin, TENTH, nstep, false);
    mins[j] = fittedMin;
    if (scales[j] > maxScale) maxScale = scales[j];
    if (mins[j] > maxMin) maxMin = mins[j];
  }
  const invScale = maxScale > 0 ? f(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? f(63 / maxMin) : 0;
  for (let j = 0; j < 8; j++) {
    levelScale[j] = Math.min(63, nearestInt(f(invScale * scales[j])) & 0xff);
    levelMin[j] = Math.min(63, nearestInt(f(invMin * mins[j])) & 0xff);
  }
  packScalesK4(dst, o + 4, levelScale, levelMin);
  writeF16(dst, o, f(maxScale / 63));
  writeF16(dst, o + 2, f(maxMin / 63));
  const d = half(dst, o), dmin = half(dst, o + 2);
  for (let j = 0; j < 8; j++) {
    const dl = f(d * scaleK4(dst, o + 4, j));
    if (!dl) continue;
    const ml = f(dmin * minK4(dst, o + 4, j));
    for (let ii = 0; ii < 32; ii++) {
      L[32 * j + ii] = clamp(nearestInt(f(f(x[p + 32 * j + ii] + ml) / dl)), 0, nmax);
    }
  }
}

export function quantizeQ4_K(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK_K, p += QK_K, o += 144) {
    quantizeK4(x, p, dst, o, 15, -1, 20);
    // 64 values per 32 bytes: sub-block 2k in the low nibbles, 2k+1 in the high
    for (let j = 0, q = o + 16; j < QK_K; j += 64, q += 32) {
      for (let l = 0; l < 32; l++) dst[q + l] = L[j + l] | (L[j + l + 32] << 4);
    }
  }
}

export function quantizeQ5_K(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK_K, p += QK_K, o += 176) {
    quantizeK4(x, p, dst, o, 31, -0.5, 15);
    const qh = o + 16;
    dst.fill(0, qh, qh + 32);
    for (let k = 0, m1 = 1, m2 = 2; k < 4; k++, m1 <<= 2, m2 <<= 2) {
      const ql = o + 48 + 32 * k;
      for (let j = 0; j < 32; j++) {
        let l1 = L[64 * k + j], l2 = L[64 * k + j + 32];
        if (l1 > 15) { l1 -= 16; dst[qh + j] |= m1; }
        if (l2 > 15) { l2 -= 16; dst[qh + j] |= m2; }
        dst[ql + j] = l1 | (l2 << 4);
      }
    }
  }
}

export function quantizeQ6_K(x: Float32Array, p: number, n: number, dst: Uint8Array, o: number): void {
  for (let b = 0; b < n; b += QK_K, p += QK_K, o += 210) {
    let maxScale = 0, maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      scales[ib] = makeQxQuants(16, 32, x, p + 16 * ib, 16 * ib);
      const a = Math.abs(scales[ib]);
      if (a > maxAbsScale) {
        maxAbsScale = a;
        maxScale = scales[ib];
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      dst.fill(0, o, o + 210);
      continue;
    }
    const iscale = f(-128 / maxScale);
    writeF16(dst, o + 208, f(1 / iscale));
    for (let ib = 0; ib < 16; ib++) dst[o + 192 + ib] = Math.min(127, nearestInt(f(iscale * scales[ib]))) & 0xff;
    const d = half(dst, o + 208);
    for (let j = 0; j < 16; j++) {
      const dl = f(d * int8(dst[o + 192 + j]));
      if (!dl) continue;
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(f(x[p + 16 * j + ii] / dl)), -32, 31) + 32;
      }
    }
    // 128 values per 64 bytes of ql (low nibbles) and 32 of qh (two high bits, four planes)
    for (let j = 0, ql = o, qh = o + 128; j < QK_K; j += 128, ql += 64, qh += 32) {
      for (let l = 0; l < 32; l++) {
        const a = L[j + l], b2 = L[j + l + 32], c = L[j + l + 64], e = L[j + l + 96];
        dst[ql + l] = (a & 0xf) | ((c & 0xf) << 4);
        dst[ql + l + 32] = (b2 & 0xf) | ((e & 0xf) << 4);
        dst[qh + l] = (a >> 4) | ((b2 >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6);
      }
    }
  }
}

