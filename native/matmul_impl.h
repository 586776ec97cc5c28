// Matrix–vector kernels, compiled three times by matmul.c: portable C (IMPL_AVX2 0), AVX2 (1),
// and AVX2 with AVX-512 VNNI dot products for the prompt path (IMPL_VNNI 1, same bits as AVX2).
// NAME(f) gives each copy its own symbol.
//
// A weight row is first decoded into "units" of 32 values: unsigned 8-bit codes q (signed for
// Q8_0), a float scale D, an int16 sub-scale per half-unit (K-quants) and a float offset M per
// half-unit, so that  w[i] = D · sc(i) · q[i] + M(i).  An activation row is quantized the same
// way (per 32 values: int8 codes, scale dx, and dx·Σcodes of each half), and then
//   Σ w·x ≈ Σ_units D·dx·Σ(sc·q·xq)  +  Σ_halves M·(dx·Σxq)
// where the first sum is exact integer arithmetic (maddubs/madd on AVX2).

// ---------------------------------------------------------------- decode one weight row

#if IMPL_AVX2
#define F16(h) _cvtsh_ss(h)
#else
#define F16(h) f16_table[h]
#endif

static void NAME(decode_row)(int type, const uint8_t *row, int64_t cols, const wrow_t *w);
#if IMPL_AVX2
static int decode_row_fast(int type, const uint8_t *row, int64_t cols, const wrow_t *w);
#endif
static void NAME(decode_row)(int type, const uint8_t *row, int64_t cols, const wrow_t *w) {
#if IMPL_AVX2
  if (decode_row_fast(type, row, cols, w)) return;
#endif
  const int64_t nu = cols / 32;
  uint8_t *restrict q = w->q;
  int16_t *restrict sc = w->sc;
  float *restrict D = w->D, *restrict M = w->M;
  switch (type) {
    case T_Q4_0: {
      const bq4_0 *x = (const bq4_0 *)row;
      for (int64_t b = 0; b < nu; b++) {
        const float d = F16(x[b].d);
        uint8_t *o = q + 32 * b;
        for (int j = 0; j < 16; j++) { o[j] = x[b].qs[j] & 15; o[j + 16] = x[b].qs[j] >> 4; }
        D[b] = d; M[2 * b] = M[2 * b + 1] = -8.0f * d;
      }
      break;
    }
    case T_Q4_1: {
      const bq4_1 *x = (const bq4_1 *)row;
      for (int64_t b = 0; b < nu; b++) {
        uint8_t *o = q + 32 * b;
        for (int j = 0; j < 16; j++) { o[j] = x[b].qs[j] & 15; o[j + 16] = x[b].qs[j] >> 4; }
        D[b] = F16(x[b].d); M[2 * b] = M[2 * b + 1] = F16(x[b].m);
      }
      break;
    }
    case T_Q5_0: {
      const bq5_0 *x = (const bq5_0 *)row;
      for (int64_t b = 0; b < nu; b++) {
        const float d = F16(x[b].d);
        uint32_t qh; memcpy(&qh, x[b].qh, 4);
        uint8_t *o = q + 32 * b;
        for (int j = 0; j < 16; j++) {
          o[j] = (x[b].qs[j] & 15) | (((qh >> j) & 1) << 4);
          o[j + 16] = (x[b].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        }
        D[b] = d; M[2 * b] = M[2 * b + 1] = -16.0f * d;
      }
      break;
    }
    case T_Q5_1: {
      const bq5_1 *x = (const bq5_1 *)row;
      for (int64_t b = 0; b < nu; b++) {
        uint32_t qh; memcpy(&qh, x[b].qh, 4);
        uint8_t *o = q + 32 * b;
        for (int j = 0; j < 16; j++) {
          o[j] = (x[b].qs[j] & 15) | (((qh >> j) & 1) << 4);
          o[j + 16] = (x[b].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        }
        D[b] = F16(x[b].d); M[2 * b] = M[2 * b + 1] = F16(x[b].m);
      }
      break;
    }
    case T_Q8_0: {
      const bq8_0 *x = (const bq8_0 *)row;
      for (int64_t b = 0; b < nu; b++) { memcpy(q + 32 * b, x[b].qs, 32); D[b] = F16(x[b].d); }
      break;
    }
    case T_Q2_K: {
      const bq2_K *x = (const bq2_K *)row;
      for (int64_t i = 0; i < nu / 8; i++) {
        const float d = F16(x[i].d), dmin = F16(x[i].dmin);
        for (int u = 0; u < 8; u++) {
          const int64_t U = 8 * i + u;
          const uint8_t *qq = x[i].qs + 32 * (u >> 2);
          const int sh = 2 * (u & 3);
          uint8_t *o = q + 32 * U;
          for (int l = 0; l < 32; l++) o[l] = (qq[l] >> sh) & 3;
          const uint8_t s0 = x[i].scales[2 * u], s1 = x[i].scales[2 * u + 1];
          for (int l = 0; l < 8; l++) { sc[16 * U + l] = s0 & 15; sc[16 * U + 8 + l] = s1 & 15; }
          D[U] = d; M[2 * U] = -dmin * (s0 >> 4); M[2 * U + 1] = -dmin * (s1 >> 4);
        }
      }
      break;
    }
    case T_Q3_K: {
      const bq3_K *x = (const bq3_K *)row;
      for (int64_t i = 0; i < nu / 8; i++) {
        const float d = F16(x[i].d);
        int8_t s[16];
        q3k_scales(x[i].scales, s);
        for (int u = 0; u < 8; u++) {
          const int64_t U = 8 * i + u;
          const uint8_t *qq = x[i].qs + 32 * (u >> 2), *hm = x[i].hmask;
          const int sh = 2 * (u & 3);
          uint8_t *o = q + 32 * U;
          for (int l = 0; l < 32; l++) o[l] = ((qq[l] >> sh) & 3) | (((hm[l] >> u) & 1) << 2);
          const int s0 = s[2 * u] - 32, s1 = s[2 * u + 1] - 32;
          for (int l = 0; l < 8; l++) { sc[16 * U + l] = (int16_t)s0; sc[16 * U + 8 + l] = (int16_t)s1; }
          D[U] = d; M[2 * U] = -4.0f * d * s0; M[2 * U + 1] = -4.0f * d * s1;
        }
      }
      break;
    }
    case T_Q4_K: case T_Q5_K: {
      const int five = type == T_Q5_K;
      const size_t bsz = five ? sizeof(bq5_K) : sizeof(bq4_K);
      for (int64_t i = 0; i < nu / 8; i++) {
        const uint8_t *blk = row + i * bsz;
        const float d = F16(((const bq4_K *)blk)->d), dmin = F16(((const bq4_K *)blk)->dmin);
        const uint8_t *scales = ((const bq4_K *)blk)->scales;
        const uint8_t *qs = five ? ((const bq5_K *)blk)->qs : ((const bq4_K *)blk)->qs;
        const uint8_t *qh = ((const bq5_K *)blk)->qh;
        for (int u = 0; u < 8; u++) {
          const int64_t U = 8 * i + u;
          const uint8_t *qq = qs + 32 * (u >> 1);
          uint8_t *o = q + 32 * U;
          if (u & 1) for (int l = 0; l < 32; l++) o[l] = qq[l] >> 4;
          else for (int l = 0; l < 32; l++) o[l] = qq[l] & 15;
          if (five) for (int l = 0; l < 32; l++) o[l] |= ((qh[l] >> u) & 1) << 4;
          uint8_t s, m;
          scale_min_k4(u, scales, &s, &m);
          for (int l = 0; l < 16; l++) sc[16 * U + l] = s;
          D[U] = d; M[2 * U] = M[2 * U + 1] = -dmin * m;
        }
      }
      break;
    }
    case T_Q6_K: {
      const bq6_K *x = (const bq6_K *)row;
      for (int64_t i = 0; i < nu / 8; i++) {
        const float d = F16(x[i].d);
        for (int u = 0; u < 8; u++) {
          const int64_t U = 8 * i + u;
          const int n = u >> 2, k = u & 3;
          const uint8_t *ql = x[i].ql + 64 * n + (k & 1) * 32, *qh = x[i].qh + 32 * n;
          const int lsh = (k >> 1) * 4, hsh = 2 * k;
          uint8_t *o = q + 32 * U;
          for (int l = 0; l < 32; l++) o[l] = ((ql[l] >> lsh) & 15) | (((qh[l] >> hsh) & 3) << 4);
          const int s0 = x[i].scales[8 * n + 2 * k], s1 = x[i].scales[8 * n + 2 * k + 1];
          for (int l = 0; l < 8; l++) { sc[16 * U + l] = (int16_t)s0; sc[16 * U + 8 + l] = (int16_t)s1; }
          D[U] = d; M[2 * U] = -32.0f * d * s0; M[2 * U + 1] = -32.0f * d * s1;
        }
      }
      break;
    }
    case T_F16: {
      const uint16_t *h = (const uint16_t *)row;
      float *f = w->f;
      int64_t i = 0;
#if IMPL_AVX2
      for (; i + 8 <= cols; i += 8) _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
#endif
      for (; i < cols; i++) f[i] = F16(h[i]);
      break;
    }
    case T_BF16: {
      const uint16_t *h = (const uint16_t *)row;
      float *f = w->f;
      for (int64_t i = 0; i < cols; i++) { uint32_t b = (uint32_t)h[i] << 16; memcpy(f + i, &b, 4); }
      break;
    }
  }
}
#undef F16

#if IMPL_AVX2 && !IMPL_VNNI // defined once: the VNNI copy calls the AVX2 one
// AVX2 decoders (the portable loops above do not vectorize well enough to keep up with memory).
static inline __m256i nibbles32(const uint8_t *qs) { // 16 bytes → low nibbles then high nibbles
  const __m128i v = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}
static inline __m256i bits32(const uint8_t *x) { // bit j of a u32 → byte j = 0xFF or 0
  uint32_t x32; memcpy(&x32, x, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x32), shuf);
  b = _mm256_or_si256(b, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1));
}
static inline __m256i bitu(__m256i v, int u) { // bit u of every byte → 0xFF or 0
  const __m256i m = _mm256_set1_epi8((char)(1 << u));
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m);
}
static inline void store_sc(int16_t *sc, int s0, int s1) {
  _mm256_storeu_si256((__m256i *)sc, _mm256_set_m128i(_mm_set1_epi16((short)s1), _mm_set1_epi16((short)s0)));
}
#define ST(p, v) _mm256_storeu_si256((__m256i *)(p), v)

static int decode_row_fast(int type, const uint8_t *row, int64_t cols, const wrow_t *w) {
  const int64_t nu = cols / 32;
  uint8_t *q = w->q; int16_t *sc = w->sc; float *D = w->D, *M = w->M;
  const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
  switch (type) {
    case T_Q4_0: {
      const bq4_0 *x = (const bq4_0 *)row;
      for (int64_t b = 0; b < nu; b++) {
        const float d = _cvtsh_ss(x[b].d);
        ST(q + 32 * b, nibbles32(x[b].qs));
        D[b] = d; M[2 * b] = M[2 * b + 1] = -8.0f * d;
      }
      return 1;
    }
    case T_Q4_1: {
      const bq4_1 *x = (const bq4_1 *)row;
      for (int64_t b = 0; b < nu; b++) {
        ST(q + 32 * b, nibbles32(x[b].qs));
        D[b] = _cvtsh_ss(x[b].d); M[2 * b] = M[2 * b + 1] = _cvtsh_ss(x[b].m);
      }
      return 1;
    }
    case T_Q5_0: {
      const bq5_0 *x = (const bq5_0 *)row;
      for (int64_t b = 0; b < nu; b++) {
        const float d = _cvtsh_ss(x[b].d);
        ST(q + 32 * b, _mm256_or_si256(nibbles32(x[b].qs), _mm256_and_si256(bits32(x[b].qh), _mm256_set1_epi8(16))));
        D[b] = d; M[2 * b] = M[2 * b + 1] = -16.0f * d;
      }
      return 1;
    }
    case T_Q5_1: {
      const bq5_1 *x = (const bq5_1 *)row;
      for (int64_t b = 0; b < nu; b++) {
        ST(q + 32 * b, _mm256_or_si256(nibbles32(x[b].qs), _mm256_and_si256(bits32(x[b].qh), _mm256_set1_epi8(16))));
        D[b] = _cvtsh_ss(x[b].d); M[2 * b] = M[2 * b + 1] = _cvtsh_ss(x[b].m);
      }
      return 1;
    }
    case T_Q8_0: {
      const bq8_0 *x = (const bq8_0 *)row;
      for (int64_t b = 0; b < nu; b++) { ST(q + 32 * b, _mm256_loadu_si256((const __m256i *)x[b].qs)); D[b] = _cvtsh_ss(x[b].d); }
      return 1;
    }
    case T_Q2_K: {
      const bq2_K *x = (const bq2_K *)row;
      for (int64_t i = 0; i < nu / 8; i++) {
        const float d = _cvtsh_ss(x[i].d), dmin = _cvtsh_ss(x[i].dmin);
        for (int h = 0; h < 2; h++) {
          const __m256i v = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
          for (int j = 0; j < 4; j++) {
            const int u = 4 * h + j;
            const int64_t U = 8 * i + u;
            ST(q + 32 * U, _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3));
            const uint8_t s0 = x[i].scales[2 * u], s1 = x[i].scales[2 * u + 1];
            store_sc(sc + 16 * U, s0 & 15, s1 & 15);
            D[U] = d; M[2 * U] = -dmin * (s0 >> 4); M[2 * U + 1] = -dmin * (s1 >> 4);
          }
        }
      }
      return 1;
    }
    case T_Q3_K: {
      const bq3_K *x = (const bq3_K *)row;
      for (int64_t i = 0; i < nu / 8; i++) {
        const float d = _cvtsh_ss(x[i].d);
        int8_t s[16];
        q3k_scales(x[i].scales, s);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        for (int h = 0; h < 2; h++) {
          const __m256i v = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
          for (int j = 0; j < 4; j++) {
            const int u = 4 * h + j;
            const int64_t U = 8 * i + u;
            const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3);
            ST(q + 32 * U, _mm256_or_si256(lo, _mm256_and_si256(bitu(hm, u), _mm256_set1_epi8(4))));
            const int s0 = s[2 * u] - 32, s1 = s[2 * u + 1] - 32;
            store_sc(sc + 16 * U, s0, s1);
            D[U] = d; M[2 * U] = -4.0f * d * s0; M[2 * U + 1] = -4.0f * d * s1;
          }
        }
      }
      return 1;
    }
    case T_Q4_K: case T_Q5_K: {
      const int five = type == T_Q5_K;
      const size_t bsz = five ? sizeof(bq5_K) : sizeof(bq4_K);
      for (int64_t i = 0; i < nu / 8; i++) {
        const uint8_t *blk = row + i * bsz;
        const float d = _cvtsh_ss(((const bq4_K *)blk)->d), dmin = _cvtsh_ss(((const bq4_K *)blk)->dmin);
        const uint8_t *scales = ((const bq4_K *)blk)->scales;
        const uint8_t *qs = five ? ((const bq5_K *)blk)->qs : ((const bq4_K *)blk)->qs;
        const __m256i qh = five ? _mm256_loadu_si256((const __m256i *)((const bq5_K *)blk)->qh) : _mm256_setzero_si256();
        for (int p = 0; p < 4; p++) {
          const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
          __m256i lo = _mm256_and_si256(v, m15), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
          if (five) {
            lo = _mm256_or_si256(lo, _mm256_and_si256(bitu(qh, 2 * p), _mm256_set1_epi8(16)));
            hi = _mm256_or_si256(hi, _mm256_and_si256(bitu(qh, 2 * p + 1), _mm256_set1_epi8(16)));
          }
          const int64_t U = 8 * i + 2 * p;
          ST(q + 32 * U, lo);
          ST(q + 32 * U + 32, hi);
          uint8_t s, m;
          scale_min_k4(2 * p, scales, &s, &m);
          _mm256_storeu_si256((__m256i *)(sc + 16 * U), _mm256_set1_epi16(s));
          D[U] = d; M[2 * U] = M[2 * U + 1] = -dmin * m;
          scale_min_k4(2 * p + 1, scales, &s, &m);
          _mm256_storeu_si256((__m256i *)(sc + 16 * U + 16), _mm256_set1_epi16(s));
          D[U + 1] = d; M[2 * U + 2] = M[2 * U + 3] = -dmin * m;
        }
      }
      return 1;
    }
    case T_Q6_K: {
      const bq6_K *x = (const bq6_K *)row;
      for (int64_t i = 0; i < nu / 8; i++) {
        const float d = _cvtsh_ss(x[i].d);
        for (int n = 0; n < 2; n++) {
          const __m256i l0 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * n));
          const __m256i l1 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * n + 32));
          const __m256i h = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * n));
          for (int k = 0; k < 4; k++) {
            const int64_t U = 8 * i + 4 * n + k;
            const __m256i l = k & 1 ? l1 : l0;
            const __m256i lo = k >> 1 ? _mm256_and_si256(_mm256_srli_epi16(l, 4), m15) : _mm256_and_si256(l, m15);
            const __m256i hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * k), m3), 4);
            ST(q + 32 * U, _mm256_or_si256(lo, hb));
            const int s0 = x[i].scales[8 * n + 2 * k], s1 = x[i].scales[8 * n + 2 * k + 1];
            store_sc(sc + 16 * U, s0, s1);
            D[U] = d; M[2 * U] = -32.0f * d * s0; M[2 * U + 1] = -32.0f * d * s1;
          }
        }
      }
      return 1;
    }
  }
  return 0;
}
#undef ST
#endif

// ---------------------------------------------------------------- quantize activations

// The activation row is quantized exactly as llama.cpp quantizes it for the weight's type
// (its vec_dot_type), so that the integer dot products, and the logits, follow llama.cpp:
//   Q8_0 (for Q4_0, Q5_0, Q8_0): per 32 values, codes round(x · 127/amax), scale amax/127 as a half;
//   Q8_1 (for Q4_1, Q5_1): the same, plus s = half(d · Σ codes) for the weight's offset term;
//   Q8_K (for the K-quants): per 256 values, codes round(x · −127/max) with max the largest |x|
//   taken with its sign, scale 1/that multiplier as a float.
static void NAME(quantize_x_q8k)(const float *x, int64_t cols, const xrow_t *xr) {
#if IMPL_AVX2
  // The same operations as the loop below, eight values at a time: the largest |x| (a maximum
  // does not depend on order), the first value of that magnitude as max (the loop's strict >),
  // codes from one multiply and a round to nearest even (nearbyintf's default mode), clamped to 127.
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < cols / 256; b++) {
    const float *v = x + 256 * b;
    __m256 am = _mm256_setzero_ps();
    for (int j = 0; j < 256; j += 8) am = _mm256_max_ps(_mm256_andnot_ps(signBit, _mm256_loadu_ps(v + j)), am); // a NaN lane keeps am, as the loop skips it
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(am, 1), _mm256_castps256_ps128(am));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    float max = 0.0f;
    if (amax != 0.0f) {
      const __m256 target = _mm256_set1_ps(amax);
      for (int j = 0; j < 256; j += 8) {
        const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(signBit, _mm256_loadu_ps(v + j)), target, _CMP_EQ_OQ));
        if (hit) { max = v[j + __builtin_ctz((unsigned)hit)]; break; }
      }
    }
    const float iscale = amax != 0.0f ? -127.0f / max : 0.0f, d = amax != 0.0f ? 1.0f / iscale : 0.0f;
    const __m256 mul = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    for (int u = 0; u < 8; u++) {
      const float *vu = v + 32 * u;
      __m256i i[4];
      for (int k = 0; k < 4; k++)
        i[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(mul, _mm256_loadu_ps(vu + 8 * k)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), top);
      const int32_t slo = hsum_i32_avx2(_mm256_add_epi32(i[0], i[1])), shi = hsum_i32_avx2(_mm256_add_epi32(i[2], i[3]));
      __m256i q = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
      q = _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256((__m256i *)(xr->q + 256 * b + 32 * u), q);
      xr->dx[8 * b + u] = d;
      xr->fs[2 * (8 * b + u)] = d * (float)slo;
      xr->fs[2 * (8 * b + u) + 1] = d * (float)shi;
    }
  }
  return;
#endif
  for (int64_t b = 0; b < cols / 256; b++) {
    const float *v = x + 256 * b;
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < 256; j++) { const float a = fabsf(v[j]); if (a > amax) { amax = a; max = v[j]; } }
    const float iscale = amax != 0.0f ? -127.0f / max : 0.0f, d = amax != 0.0f ? 1.0f / iscale : 0.0f;
    for (int u = 0; u < 8; u++) {
      int32_t half[2] = { 0, 0 };
      for (int j = 0; j < 32; j++) {
        int32_t c = (int32_t)nearbyintf(iscale * v[32 * u + j]);
        if (c > 127) c = 127;
        xr->q[256 * b + 32 * u + j] = (int8_t)c;
        half[j >= 16] += c;
      }
      xr->dx[8 * b + u] = d;
      xr->fs[2 * (8 * b + u)] = d * (float)half[0];
      xr->fs[2 * (8 * b + u) + 1] = d * (float)half[1];
    }
  }
}

static void NAME(quantize_x)(const float *x, int64_t cols, const xrow_t *xr, int scheme) {
  if (scheme == XQ_Q8K) { NAME(quantize_x_q8k)(x, cols, xr); return; }
  const int64_t nu = cols / 32;
  for (int64_t u = 0; u < nu; u++) {
    const float *v = x + 32 * u;
#if IMPL_AVX2
    __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8), v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(signBit, v0);
    m = _mm256_max_ps(m, _mm256_andnot_ps(signBit, v1));
    m = _mm256_max_ps(m, _mm256_andnot_ps(signBit, v2));
    m = _mm256_max_ps(m, _mm256_andnot_ps(signBit, v3));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    // As llama.cpp's quantize_row_q8_0: codes from 127/amax, the scale stored as a half.
    const float d = round_f16(amax / 127.0f), id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m256 mul = _mm256_set1_ps(id);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const int32_t slo = hsum_i32_avx2(_mm256_add_epi32(i0, i1)), shi = hsum_i32_avx2(_mm256_add_epi32(i2, i3));
    i0 = _mm256_packs_epi32(i0, i1);
    i2 = _mm256_packs_epi32(i2, i3);
    i0 = _mm256_packs_epi16(i0, i2);
    i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(xr->q + 32 * u), i0);
#else
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) { const float a = fabsf(v[j]); if (a > amax) amax = a; }
    const float d = round_f16(amax / 127.0f), id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t slo = 0, shi = 0;
    for (int j = 0; j < 32; j++) {
      const int32_t c = (int32_t)nearbyintf(v[j] * id);
      xr->q[32 * u + j] = (int8_t)c;
      if (j < 16) slo += c; else shi += c;
    }
#endif
    xr->dx[u] = d;
    if (xr->sx) xr->sx[u] = slo + shi;
    if (scheme == XQ_Q8_1) { // one offset sum per block, rounded to a half as block_q8_1.s is
      xr->fs[2 * u] = round_f16(amax / 127.0f * (float)(slo + shi));
      xr->fs[2 * u + 1] = 0.0f;
    } else {
      xr->fs[2 * u] = d * (float)slo;
      xr->fs[2 * u + 1] = d * (float)shi;
    }
  }
}

// ---------------------------------------------------------------- dot products

// Σ M·fs over the 2·nu half-units (the offsets and mins of the weight).
static inline float NAME(offset_dot)(const float *M, const float *fs, int64_t n) {
  int64_t i = 0;
  float s = 0.0f;
#if IMPL_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0; // four chains: this is latency-bound
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(M + i), _mm256_loadu_ps(fs + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(M + i + 8), _mm256_loadu_ps(fs + i + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(M + i + 16), _mm256_loadu_ps(fs + i + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(M + i + 24), _mm256_loadu_ps(fs + i + 24), a3);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(M + i), _mm256_loadu_ps(fs + i), a0);
  s = hsum_f32_avx2(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
#endif
  for (; i < n; i++) s += M[i] * fs[i];
  return s;
}

#if IMPL_VNNI
// dotq for four activation rows with vpdpbusd, two rows per 512-bit register (a 256-bit half
// each). Per row, every float operation is AVX2 dotq's, in its order: vpdpbusd gives the same
// int32 lanes as maddubs + madd(1) (4 consecutive products each, no saturation for these codes).
// Not for KIND_US, whose 16-value sub-scales need madd.
static inline __attribute__((always_inline)) void vnni_dotq4(const wrow_t *w, int64_t nu, const xrow_t *xr, int kind, float *res) {
  __m512 a01 = _mm512_setzero_ps(), a23 = a01;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t u = 0; u < nu; u++) {
    const __m512i wq = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w->q + 32 * u)));
    const __m512i wa = kind == KIND_S ? _mm512_abs_epi8(wq) : wq;
    const __mmask64 neg = kind == KIND_S ? _mm512_movepi8_mask(wq) : 0; // x takes the weight's sign
    const __m512 Dv = _mm512_set1_ps(w->D[u]);
#define PAIR(acc, a, b) do { \
      __m512i xv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(xr[a].q + 32 * u))), \
                                      _mm256_loadu_si256((const __m256i *)(xr[b].q + 32 * u)), 1); \
      if (kind == KIND_S) xv = _mm512_mask_sub_epi8(xv, neg, zero, xv); \
      const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, wa, xv)); \
      const __m512 dx = _mm512_insertf32x8(_mm512_set1_ps(xr[a].dx[u]), _mm256_set1_ps(xr[b].dx[u]), 1); \
      acc = _mm512_fmadd_ps(_mm512_mul_ps(p, Dv), dx, acc); \
    } while (0)
    PAIR(a01, 0, 1);
    PAIR(a23, 2, 3);
#undef PAIR
  }
  res[0] = hsum_f32_avx2(_mm512_castps512_ps256(a01));
  res[1] = hsum_f32_avx2(_mm512_extractf32x8_ps(a01, 1));
  res[2] = hsum_f32_avx2(_mm512_castps512_ps256(a23));
  res[3] = hsum_f32_avx2(_mm512_extractf32x8_ps(a23, 1));
}
#endif

// res[r] = row · x_r for NR activation rows; kind: KIND_U / KIND_US / KIND_S.
static inline __attribute__((always_inline)) void NAME(dotq)(const wrow_t *w, int64_t nu, const xrow_t *xr, int NR, int kind, float *res) {
#if IMPL_VNNI
  if (NR == 4 && kind != KIND_US) {
    vnni_dotq4(w, nu, xr, kind, res);
    if (kind != KIND_S)
      for (int r = 0; r < NR; r++) res[r] += NAME(offset_dot)(w->M, xr[r].fs, 2 * nu);
    return;
  }
#endif
#if IMPL_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0; // separate names keep them in registers
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t *x0 = xr[0].q, *x1 = NR > 1 ? xr[1].q : NULL, *x2 = NR > 1 ? xr[2].q : NULL, *x3 = NR > 1 ? xr[3].q : NULL;
  const float *d0 = xr[0].dx, *d1 = NR > 1 ? xr[1].dx : NULL, *d2 = NR > 1 ? xr[2].dx : NULL, *d3 = NR > 1 ? xr[3].dx : NULL;
  for (int64_t u = 0; u < nu; u++) {
    const __m256i wq = _mm256_loadu_si256((const __m256i *)(w->q + 32 * u));
    const __m256i s = kind == KIND_US ? _mm256_loadu_si256((const __m256i *)(w->sc + 16 * u)) : ones;
    const __m256i wa = kind == KIND_S ? _mm256_sign_epi8(wq, wq) : wq;
    const __m256 Dv = _mm256_set1_ps(w->D[u]);
#define STEP(acc, xq, dx) do { \
      __m256i xv = _mm256_loadu_si256((const __m256i *)((xq) + 32 * u)); \
      if (kind == KIND_S) xv = _mm256_sign_epi8(xv, wq); \
      const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xv), s); \
      acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(p), Dv), _mm256_broadcast_ss((dx) + u), acc); \
    } while (0)
    STEP(a0, x0, d0);
    if (NR > 1) { STEP(a1, x1, d1); STEP(a2, x2, d2); STEP(a3, x3, d3); }
#undef STEP
  }
  res[0] = hsum_f32_avx2(a0);
  if (NR > 1) { res[1] = hsum_f32_avx2(a1); res[2] = hsum_f32_avx2(a2); res[3] = hsum_f32_avx2(a3); }
  if (kind != KIND_S)
    for (int r = 0; r < NR; r++) res[r] += NAME(offset_dot)(w->M, xr[r].fs, 2 * nu);
#else
  for (int r = 0; r < NR; r++) {
    float acc = 0.0f;
    for (int64_t u = 0; u < nu; u++) {
      const int8_t *xq = xr[r].q + 32 * u;
      const uint8_t *wq = w->q + 32 * u;
      int32_t lo = 0, hi = 0;
      if (kind == KIND_S) {
        for (int j = 0; j < 16; j++) { lo += (int8_t)wq[j] * xq[j]; hi += (int8_t)wq[j + 16] * xq[j + 16]; }
      } else {
        for (int j = 0; j < 16; j++) { lo += wq[j] * xq[j]; hi += wq[j + 16] * xq[j + 16]; }
      }
      const int32_t isum = kind == KIND_US ? lo * w->sc[16 * u] + hi * w->sc[16 * u + 8] : lo + hi;
      acc += w->D[u] * xr[r].dx[u] * (float)isum;
    }
    if (kind != KIND_S) acc += NAME(offset_dot)(w->M, xr[r].fs, 2 * nu);
    res[r] = acc;
  }
#endif
}

static inline __attribute__((always_inline)) void NAME(dotf)(const float *w, int64_t n, const float *const *xr, int NR, float *res) {
  int64_t i = 0;
  float s[4] = { 0, 0, 0, 0 };
#if IMPL_AVX2
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (; i + 8 <= n; i += 8) {
    const __m256 wv = _mm256_loadu_ps(w + i);
    for (int r = 0; r < NR; r++) acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xr[r] + i), acc[r]);
  }
  for (int r = 0; r < NR; r++) s[r] = hsum_f32_avx2(acc[r]);
#endif
  for (; i < n; i++)
    for (int r = 0; r < NR; r++) s[r] += w[i] * xr[r][i];
  for (int r = 0; r < NR; r++) res[r] = s[r];
}

// ---------------------------------------------------------------- the matmul task

static void NAME(quantize_chunk)(void *p, int64_t t, int ith) {
  (void)ith;
  const mm_t *m = p;
  xrow_t xr = xrow_at(m, t);
  NAME(quantize_x)(m->x + t * m->cols, m->cols, &xr, m->xscheme);
}

// One chunk: a block of ROW_BLOCK weight rows, decoded once, times every activation row. Each
// output is computed by exactly one thread with the same operations whatever the thread count,
// so results are bit-identical for any number of threads.
static void NAME(matmul_chunk)(void *p, int64_t blk, int ith) {
  const mm_t *m = p;
  const int64_t cols = m->cols, nu = cols / 32, T = m->T, rows = m->rows;
  const int isF = m->kind == KIND_F, f32 = m->type == T_F32;
  const size_t per = isF ? (size_t)cols * sizeof(float) + 64 : (size_t)nu * (32 + 32 + 4 + 8) + 64;
  uint8_t *buf = (isF && f32) ? NULL : pool_scratch(ith, 0, per * ROW_BLOCK);
  wrow_t w[ROW_BLOCK];
  for (int i = 0; i < ROW_BLOCK; i++) {
    uint8_t *b = buf ? buf + per * i : NULL;
    if (isF) { w[i].f = (float *)b; continue; }
    w[i].q = b; w[i].sc = (int16_t *)(b + 32 * nu); w[i].D = (float *)(b + 64 * nu); w[i].M = w[i].D + nu;
  }
  {
    const int64_t r0 = blk * ROW_BLOCK, nr = rows - r0 < ROW_BLOCK ? rows - r0 : ROW_BLOCK;
    const float *wf[ROW_BLOCK];
    for (int64_t i = 0; i < nr; i++) {
      const uint8_t *row = m->w + (r0 + i) * m->rb;
      if (isF && f32) { wf[i] = (const float *)row; continue; }
      NAME(decode_row)(m->type, row, cols, &w[i]);
      wf[i] = w[i].f;
    }
    float res[4];
    int64_t t = 0;
    for (; t + 4 <= T; t += 4) {
      if (isF) {
        const float *xs[4] = { m->x + t * cols, m->x + (t + 1) * cols, m->x + (t + 2) * cols, m->x + (t + 3) * cols };
        for (int64_t i = 0; i < nr; i++) {
          NAME(dotf)(wf[i], cols, xs, 4, res);
          for (int k = 0; k < 4; k++) m->out[(t + k) * rows + r0 + i] = res[k];
        }
      } else {
        const xrow_t xs[4] = { xrow_at(m, t), xrow_at(m, t + 1), xrow_at(m, t + 2), xrow_at(m, t + 3) };
        for (int64_t i = 0; i < nr; i++) {
          switch (m->kind) {
            case KIND_U: NAME(dotq)(&w[i], nu, xs, 4, KIND_U, res); break;
            case KIND_US: NAME(dotq)(&w[i], nu, xs, 4, KIND_US, res); break;
            default: NAME(dotq)(&w[i], nu, xs, 4, KIND_S, res); break;
          }
          for (int k = 0; k < 4; k++) m->out[(t + k) * rows + r0 + i] = res[k];
        }
      }
    }
    for (; t < T; t++) {
      if (isF) {
        const float *xs[1] = { m->x + t * cols };
        for (int64_t i = 0; i < nr; i++) { NAME(dotf)(wf[i], cols, xs, 1, res); m->out[t * rows + r0 + i] = res[0]; }
      } else {
        const xrow_t xs[1] = { xrow_at(m, t) };
        for (int64_t i = 0; i < nr; i++) {
          switch (m->kind) {
            case KIND_U: NAME(dotq)(&w[i], nu, xs, 1, KIND_U, res); break;
            case KIND_US: NAME(dotq)(&w[i], nu, xs, 1, KIND_US, res); break;
            default: NAME(dotq)(&w[i], nu, xs, 1, KIND_S, res); break;
          }
          m->out[t * rows + r0 + i] = res[0];
        }
      }
    }
  }
}
