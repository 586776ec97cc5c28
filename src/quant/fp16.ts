// Half floats: IEEE binary16 (f16) and bfloat16 (bf16), to and from float32.
// f32 → f16 rounds to nearest, ties to even (as the F16C instruction vcvtps2ph with mode 0 does);
// f32 → bf16 rounds the same way and quiets NaN, bit for bit like ggml's GGML_FP32_TO_BF16.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The bits of the float32 nearest to `x`. */
export function f32Bits(x: number): number {
  f32[0] = x;
  return u32[0];
}

/** The float32 whose bits are `bits`. */
export function f32FromBits(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0];
}

/** f16 bits → value (exact). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24; // zero and subnormals
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

/** Value → f16 bits: the float32 nearest to `x`, then rounded to nearest even. */
export function f32ToF16(x: number): number {
  const u = f32Bits(x);
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) return mant ? sign | 0x7e00 | (mant >>> 13) : sign | 0x7c00; // NaN stays NaN (quiet)
  const e = exp - 127 + 15; // the f16 exponent field
  if (e >= 31) return sign | 0x7c00; // overflow → inf
  if (e <= 0) {
    // f16 subnormal: value / 2^-24, rounded. m * 2^(exp-150) / 2^-24 = m >> (126 - exp)
    if (exp === 0) return sign;
    const shift = 14 - e;
    if (shift >= 25) return sign; // below half the smallest subnormal
    const m = mant | 0x800000;
    let q = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && q & 1)) q++;
    return sign | q; // a carry into bit 10 gives the smallest normal, as it should
  }
  let q = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && q & 1)) q++; // a carry may reach inf, correctly
  return sign | q;
}

/** bf16 bits → value (exact: bf16 is the top half of a float32). */
export function bf16ToF32(h: number): number {
  return f32FromBits((h & 0xffff) << 16);
}

/** Value → bf16 bits, rounded to nearest even; NaN is kept and quieted. */
export function f32ToBF16(x: number): number {
  const u = f32Bits(x);
  if ((u & 0x7fffffff) > 0x7f800000) return (u >>> 16) | 64;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Every f16 bit pattern's value: one table look-up per half float in the inner loops. */
export const F16_TABLE: Float32Array = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16ToF32(h);
  return t;
})();

/** The f16 stored little-endian at `src[o]`. */
export function readF16(src: Uint8Array, o: number): number {
  return F16_TABLE[src[o] | (src[o + 1] << 8)];
}

/** Store `x` as a little-endian f16 at `dst[o]`. */
export function writeF16(dst: Uint8Array, o: number, x: number): void {
  const h = f32ToF16(x);
  dst[o] = h & 0xff;
  dst[o + 1] = h >>> 8;
}

/** Round `x` to f16 and back: what a value becomes once stored as f16. */
export function roundF16(x: number): number {
  return F16_TABLE[f32ToF16(x)];
}
