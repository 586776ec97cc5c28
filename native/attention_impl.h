// Inference attention over a KV cache, compiled three times by attention.c (portable / AVX2 / AVX-512).
// Keys and values are read in the cache's own type (F32, F16, or Q8_0 blocks of 32 along a
// head), one row of one KV head at a time, converted once and shared by the query heads of that
// KV head (grouped-query attention reads each K/V row once for the whole group).

// One head's slice of a cached row (hd values of `type`) as floats: the row itself for F32,
// else converted into tmp.
static inline const float *NAME(kv_row)(const uint8_t *row, int type, int64_t hd, float *tmp) {
  if (type == T_F32) return (const float *)row;
  int64_t i = 0;
  if (type == T_F16) {
    const uint16_t *h = (const uint16_t *)row;
#if IMPL_AVX2
    for (; i + 8 <= hd; i += 8) _mm256_storeu_ps(tmp + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
#endif
    for (; i < hd; i++) tmp[i] = f16_to_f32(h[i]);
    return tmp;
  }
  // Q8_0: blocks of { half d; int8 q[32] } (34 bytes), value = d · q.
  for (int64_t b = 0; b < hd / 32; b++) {
    const uint8_t *blk = row + b * 34;
    uint16_t dh; memcpy(&dh, blk, 2);
    const float d = f16_to_f32(dh);
    const int8_t *q = (const int8_t *)(blk + 2);
    float *o = tmp + b * 32;
#if IMPL_AVX2
    const __m256 dv = _mm256_set1_ps(d);
    for (int j = 0; j < 32; j += 8)
      _mm256_storeu_ps(o + j, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + j))))));
#else
    for (int j = 0; j < 32; j++) o[j] = d * (float)q[j];
#endif
  }
  return tmp;
}

static inline float NAME(att_dot)(const float *a, const float *b, int64_t n) {
  int64_t i = 0;
  float s = 0.0f;
#if IMPL_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  s = hsum_f32_avx2(_mm256_add_ps(acc0, acc1));
#endif
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

// o += e · x over n values.
static inline void NAME(att_axpy)(float *o, float e, const float *x, int64_t n) {
  int64_t i = 0;
#if IMPL_AVX2
  const __m256 ev = _mm256_set1_ps(e);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + i), _mm256_loadu_ps(o + i)));
#endif
  for (; i < n; i++) o[i] += e * x[i];
}

// The vector path (AVX2 and AVX-512 passes; heads whose size is a multiple of the vector width):
// keys and values are converted in registers, never stored; the query heads of a KV head are
// taken ATT_HEADS at a time so that one converted K (or V) vector serves all of them, and each
// head's output sums stay in registers for a whole chunk (ATT_LANES vectors of it at a time).
// Every score and every output lane is the same arithmetic as the row-at-a-time code below (a
// score: att_dot; an output lane: 0, then fma(p_j, v_j, ·) for j in order), so the AVX2 and
// AVX-512 passes give the same bits.
#if IMPL_AVX2
#define ATT_HEADS 4
#if IMPL_AVX512
#define VF __m512
#define VL 16
#define ATT_LANES 4
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(x) _mm512_set1_ps(x)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_LOADF(p) _mm512_loadu_ps(p)
#define V_STOREF(p, v) _mm512_storeu_ps(p, v)
#define V_LOADH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define V_LOADI8(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#else
#define VF __m256
#define VL 8
#define ATT_LANES 2
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(x) _mm256_set1_ps(x)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_LOADF(p) _mm256_loadu_ps(p)
#define V_STOREF(p, v) _mm256_storeu_ps(p, v)
#define V_LOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define V_LOADI8(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#endif

// A cached head slice (len bytes at p, every line of it) fetched ATT_PF positions ahead:
// one head's K or V slices are a strided walk (a position's row holds every KV head), which the
// hardware prefetchers followed poorly here (decode over a long cache, 1 thread). Still needed
// where att_partial_heads reads whole rows block by block: without it decode attention over a
// 4096-position cache read ~10 GB/s from memory with 2 threads, with it ~17–20 (Intel Xeon).
// Where the lines go depends on the CPU (toy_kv_l2, set at load by addon.c; TOY_KV_PREFETCH=l1|l2
// overrides it): into L1 (prefetcht0) on Intel, as measured there; into L2 (prefetcht1) on AMD,
// the other way round from the weights' streams (prefetch.h). AMD EPYC (Zen 4), SmolLM2 shapes,
// an F16 cache of 4096 positions read from memory, µs per layer (scripts/attention-cpu-time.mjs,
// interleaved runs, 2026-12-06): 1 thread 220–330 into L2 against 310–430 into L1; 2 threads
// 145–180 against 200–235. SmolLM2 decode, ms per step, medians of 5 interleaved runs: F16 at
// depth 4096, 1 thread 18.2 against 21.1, 2 threads 14.1 against 15.6; Q8_0 at depth 1024,
// 2 threads 6.90 against 7.66.
// The distance is not the lever: 32 positions ahead ran as 16 with either hint, 8 slower. Nor
// is the order of the lines: asking for whole rows on the first KV head's pass (255 µs a layer
// against 210), or a block's rows at once before it (359 against 283), ran slower than asking
// for each slice as it is read (2026-12-06). Every line of the slice: with only its first two
// asked for, Gemma 3's 512-byte F16 slices, read four keys side by side (att_scores16), took
// 517 µs a layer from memory against 369.
#define ATT_PF 16
#define ATT_PREFETCH_HINT(p, len, hint) do { for (int64_t o_ = 0; o_ < (len); o_ += 64) _mm_prefetch((const char *)(p) + o_, hint); } while (0)
#define ATT_PREFETCH(p, len) do { if (toy_kv_l2) ATT_PREFETCH_HINT(p, len, _MM_HINT_T1); else ATT_PREFETCH_HINT(p, len, _MM_HINT_T0); } while (0)

// VL values of a cached head slice from value i (i a multiple of 8; Q8_0: d · q, as kv_row).
TOY_INLINE VF NAME(kv_vec)(const uint8_t *row, int type, int64_t i) {
  if (type == T_F32) return V_LOADF((const float *)row + i);
  if (type == T_F16) return V_LOADH((const uint16_t *)row + i);
  const uint8_t *blk = row + (i / 32) * 34;
  uint16_t dh; memcpy(&dh, blk, 2);
  return V_MUL(V_SET1(_cvtsh_ss(dh)), V_LOADI8(blk + 2 + i % 32)); // F16C: f16_to_f32 exactly
}

// scores[h · ATT_CHUNK + j] = scale · q_h · k_j for nh (≤ ATT_HEADS) heads from q, keys j < n, in
// att_dot's order: two 8-lane FMA chains (columns 16c..16c+7 and 16c+8..16c+15), the columns
// past a multiple of 16 into the first, then the hsum of their sum. AVX-512 keeps both chains in
// one register (its low and high halves are exactly those columns), so both passes give att_dot's
// bits (hd a multiple of 16 there).
TOY_INLINE void NAME(att_scores_vec)(const att_t *a, const uint8_t *k, int type, int64_t n, const float *q, int nh, float *scores) {
  const int64_t hd = a->headDim;
  // Each key's 8-lane sum (the two chains added) is kept for a group of eight keys, whose
  // horizontal sums then run side by side (hsum8_f32_avx2: the same additions as hsum_f32_avx2,
  // so the same bits, at a fraction of the shuffles); a last group of fewer keys one by one.
  __m256 sums[ATT_HEADS][8];
  const __m256 scale = _mm256_set1_ps(a->scale);
  for (int64_t j = 0; j < n; j++) {
    const uint8_t *row = k + j * a->rowBytes;
    const int jj = (int)(j & 7);
    ATT_PREFETCH(row + ATT_PF * a->rowBytes, a->headBytes);
#if IMPL_AVX512
    __m512 acc[ATT_HEADS];
    for (int h = 0; h < nh; h++) acc[h] = _mm512_setzero_ps();
    for (int64_t i = 0; i < hd; i += 16) {
      const __m512 kv = NAME(kv_vec)(row, type, i);
      for (int h = 0; h < nh; h++) acc[h] = _mm512_fmadd_ps(_mm512_loadu_ps(q + h * hd + i), kv, acc[h]);
    }
    for (int h = 0; h < nh; h++)
      sums[h][jj] = _mm256_add_ps(_mm512_castps512_ps256(acc[h]), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[h]), 1)));
#else
    __m256 acc0[ATT_HEADS], acc1[ATT_HEADS];
    for (int h = 0; h < nh; h++) acc0[h] = acc1[h] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= hd; i += 16) {
      const __m256 k0 = NAME(kv_vec)(row, type, i), k1 = NAME(kv_vec)(row, type, i + 8);
      for (int h = 0; h < nh; h++) {
        acc0[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * hd + i), k0, acc0[h]);
        acc1[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * hd + i + 8), k1, acc1[h]);
      }
    }
    if (i < hd) { // 8 more
      const __m256 k0 = NAME(kv_vec)(row, type, i);
      for (int h = 0; h < nh; h++) acc0[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * hd + i), k0, acc0[h]);
    }
    for (int h = 0; h < nh; h++) sums[h][jj] = _mm256_add_ps(acc0[h], acc1[h]);
#endif
    if (jj == 7)
      for (int h = 0; h < nh; h++) _mm256_storeu_ps(scores + h * ATT_CHUNK + j - 7, _mm256_mul_ps(hsum8_f32_avx2(sums[h]), scale));
  }
  for (int64_t j = n & ~(int64_t)7; j < n; j++)
    for (int h = 0; h < nh; h++) scores[h * ATT_CHUNK + j] = hsum_f32_avx2(sums[h][j & 7]) * a->scale;
}

// out_h[i0 .. i0 + nl·VL) = Σ_j p_h[j] v_j over keys j < n, for nh heads (out rows `stride` apart).
// carry: go on from the sums already in out (the keys before these), else from zero; the FMAs
// run in key order either way.
TOY_INLINE void NAME(att_values_vec)(const att_t *a, const uint8_t *v, int type, int64_t n, int64_t i0, int nl, int nh,
                                    const float *p, float *out, int64_t stride, int carry) {
  VF acc[ATT_HEADS][ATT_LANES];
  for (int h = 0; h < nh; h++)
    for (int l = 0; l < nl; l++) acc[h][l] = carry ? V_LOADF(out + h * stride + i0 + l * VL) : V_ZERO();
  for (int64_t j = 0; j < n; j++) {
    const uint8_t *row = v + j * a->rowBytes;
    if (i0 == 0) ATT_PREFETCH(row + ATT_PF * a->rowBytes, a->headBytes);
    VF e[ATT_HEADS];
    for (int h = 0; h < nh; h++) e[h] = V_SET1(p[h * ATT_CHUNK + j]);
    for (int l = 0; l < nl; l++) {
      const VF x = NAME(kv_vec)(row, type, i0 + l * VL);
      for (int h = 0; h < nh; h++) acc[h][l] = V_FMA(e[h], x, acc[h][l]);
    }
  }
  for (int h = 0; h < nh; h++)
    for (int l = 0; l < nl; l++) V_STOREF(out + h * stride + i0 + l * VL, acc[h][l]);
}

#if IMPL_AVX512
// att_scores_vec for 16 keys at once (AVX-512), the same bits: each key's 16-lane FMA chain as
// there, then the horizontal sums of 16 keys side by side in zmm registers, the same additions
// in the same tree as hsum_f32_avx2 (lo + hi halves, then ((v0 + v4) + (v2 + v6)) + ((v1 + v5) +
// (v3 + v7))). Per key that is 3 shuffles and 1.5 adds a head, where the one-key-at-a-time code
// spends an extract, an add, a store and a share of hsum8 through the stack, and its FMA chains
// (one per head) are 4 deep with nothing beside them; here 4 keys' chains run side by side.
// AMD EPYC (Zen 4), 1 thread, attention over a cache of 4096 positions, µs per layer, medians of
// 5 interleaved runs against the one-key code (2026-12-06): SmolLM2 shapes (9 heads, 3 KV, 64),
// F16, held in L3 159 against 189, read from memory 235 against 267; Gemma 3 shapes (4 heads,
// 1 KV, 256) from memory, with ATT_PREFETCH asking for every line of a slice, F16 369 against
// 484, Q8_0 302 against 395 (3 runs). From memory the rest is the memory's: with 2 threads
// (SmolLM2, F16) 130 against 145.
TOY_INLINE void NAME(att_scores16)(const att_t *a, const uint8_t *k, int type, const float *q, int nh, float *scores) {
  const int64_t hd = a->headDim;
  __m512 b4[ATT_HEADS][4]; // [h][m]: keys 4m .. 4m + 3, one per 128-bit lane: (v_l + v_{l+4}), l = 0..3
  for (int m = 0; m < 4; m++) {
    const uint8_t *rows = k + 4 * m * a->rowBytes;
    for (int r = 0; r < 4; r++) ATT_PREFETCH(rows + (r + ATT_PF) * a->rowBytes, a->headBytes);
    __m512 acc[4][ATT_HEADS];
    for (int r = 0; r < 4; r++)
      for (int h = 0; h < nh; h++) acc[r][h] = _mm512_setzero_ps();
    for (int64_t i = 0; i < hd; i += 16)
      for (int r = 0; r < 4; r++) {
        const __m512 kv = NAME(kv_vec)(rows + r * a->rowBytes, type, i);
        for (int h = 0; h < nh; h++) acc[r][h] = _mm512_fmadd_ps(_mm512_loadu_ps(q + h * hd + i), kv, acc[r][h]);
      }
    for (int h = 0; h < nh; h++) {
      // [v of key 0 | v of key 1], v = lo + hi; 128-bit lanes: key 0 v0-3, v4-7, key 1 v0-3, v4-7
      const __m512 p01 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0][h], acc[1][h], 0x44), _mm512_shuffle_f32x4(acc[0][h], acc[1][h], 0xEE));
      const __m512 p23 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2][h], acc[3][h], 0x44), _mm512_shuffle_f32x4(acc[2][h], acc[3][h], 0xEE));
      b4[h][m] = _mm512_add_ps(_mm512_shuffle_f32x4(p01, p23, 0x88), _mm512_shuffle_f32x4(p01, p23, 0xDD));
    }
  }
  const __m512 scale = _mm512_set1_ps(a->scale);
  // lane L of b4[h][m] is key 4m + L; after the two steps below element 4L + e is key 4e + L
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int h = 0; h < nh; h++) {
    const __m512 c01 = _mm512_add_ps(_mm512_shuffle_ps(b4[h][0], b4[h][1], 0x44), _mm512_shuffle_ps(b4[h][0], b4[h][1], 0xEE));
    const __m512 c23 = _mm512_add_ps(_mm512_shuffle_ps(b4[h][2], b4[h][3], 0x44), _mm512_shuffle_ps(b4[h][2], b4[h][3], 0xEE));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(c01, c23, 0x88), _mm512_shuffle_ps(c01, c23, 0xDD));
    _mm512_storeu_ps(scores + h * ATT_CHUNK, _mm512_mul_ps(_mm512_permutexvar_ps(order, s), scale));
  }
}
#endif

// Both, for one cache type (a constant after inlining) and any number of heads.
TOY_INLINE void NAME(att_scores_t)(const att_t *a, const uint8_t *k, int type, int64_t n, const float *q, int64_t g, float *scores) {
  for (int64_t h0 = 0; h0 < g; h0 += ATT_HEADS) {
    const int64_t nh = g - h0 < ATT_HEADS ? g - h0 : ATT_HEADS;
    const float *qh = q + h0 * a->headDim;
    float *sh = scores + h0 * ATT_CHUNK;
    int64_t j = 0;
    // 16 keys at a time where AVX-512 has them, the rest one at a time (the same bits)
#if IMPL_AVX512
#define ATT_S16(NH) for (; j + 16 <= n; j += 16) NAME(att_scores16)(a, k + j * a->rowBytes, type, qh, NH, sh + j)
#else
#define ATT_S16(NH) (void)0
#endif
#define ATT_S(NH) do { ATT_S16(NH); if (j < n) NAME(att_scores_vec)(a, k + j * a->rowBytes, type, n - j, qh, NH, sh + j); } while (0)
    switch (nh) { // constant head counts: the accumulators stay in registers
      case 1: ATT_S(1); break;
      case 2: ATT_S(2); break;
      case 3: ATT_S(3); break;
      default: ATT_S(4); break;
    }
#undef ATT_S
#undef ATT_S16
  }
}
TOY_INLINE void NAME(att_values_t)(const att_t *a, const uint8_t *v, int type, int64_t n, const float *p, int64_t g, float *out, int64_t stride,
                                  int carry) {
  const int64_t hd = a->headDim;
  for (int64_t h0 = 0; h0 < g; h0 += ATT_HEADS) {
    const int64_t nh = g - h0 < ATT_HEADS ? g - h0 : ATT_HEADS;
    const float *ph = p + h0 * ATT_CHUNK;
    float *oh = out + h0 * stride;
    for (int64_t i0 = 0; i0 < hd; i0 += ATT_LANES * VL) {
      const int full = hd - i0 >= ATT_LANES * VL;
#define ATT_V(NH) do { if (full) NAME(att_values_vec)(a, v, type, n, i0, ATT_LANES, NH, ph, oh, stride, carry); \
                       else for (int64_t i = i0; i < hd; i += VL) NAME(att_values_vec)(a, v, type, n, i, 1, NH, ph, oh, stride, carry); } while (0)
      switch (nh) {
        case 1: ATT_V(1); break;
        case 2: ATT_V(2); break;
        case 3: ATT_V(3); break;
        default: ATT_V(4); break;
      }
#undef ATT_V
    }
  }
}

// The two passes in the cache's type (a constant inside each call).
TOY_INLINE void NAME(att_scores_any)(const att_t *a, const uint8_t *k, int64_t n, const float *q, int64_t g, float *scores) {
  if (a->type == T_F16) NAME(att_scores_t)(a, k, T_F16, n, q, g, scores);
  else if (a->type == T_Q8_0) NAME(att_scores_t)(a, k, T_Q8_0, n, q, g, scores);
  else NAME(att_scores_t)(a, k, T_F32, n, q, g, scores);
}
TOY_INLINE void NAME(att_values_any)(const att_t *a, const uint8_t *v, int64_t n, const float *p, int64_t g, float *out, int64_t stride, int carry) {
  if (a->type == T_F16) NAME(att_values_t)(a, v, T_F16, n, p, g, out, stride, carry);
  else if (a->type == T_Q8_0) NAME(att_values_t)(a, v, T_Q8_0, n, p, g, out, stride, carry);
  else NAME(att_values_t)(a, v, T_F32, n, p, g, out, stride, carry);
}
#endif

#if IMPL_AVX512
// vexp (vmath_avx2.h) on 16 lanes: the same operations lane by lane, so the same values (vmaxps
// and vminps return their second operand for a NaN in either width; the round and the convert
// both round to nearest).
TOY_INLINE __m512 NAME(vexp16)(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504089f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}
#endif

/** Softcap, then the partial softmax of n scores in place: sc[j] ← e^(sc[j] − max); p = { max, Σ }. */
static void NAME(att_softmax)(const att_t *a, float *sc, int64_t n, float *p) {
  if (a->softcap > 0)
    for (int64_t j = 0; j < n; j++) sc[j] = a->softcap * tanhf(sc[j] / a->softcap);
  float max = -INFINITY;
  int64_t jm = 0;
#if IMPL_AVX2
  // Eight lanes at a time (a NaN score is skipped, as below: vmaxps returns its second operand).
  __m256 mv = _mm256_set1_ps(-INFINITY);
  for (; jm + 8 <= n; jm += 8) mv = _mm256_max_ps(_mm256_loadu_ps(sc + jm), mv);
  float lanes[8];
  _mm256_storeu_ps(lanes, mv);
  for (int l = 0; l < 8; l++) if (lanes[l] > max) max = lanes[l];
#endif
  for (; jm < n; jm++) if (sc[jm] > max) max = sc[jm];
  int64_t j = 0;
  float sum = 0.0f;
#if IMPL_AVX2
  __m256 acc = _mm256_setzero_ps();
#if IMPL_AVX512
  // Decode over a long cache spends a tenth of its attention here: e^x 16 lanes at a time, each
  // half added to the 8 lane sums in the order the 8-lane loop adds them (the same bits).
  const __m512 mv16 = _mm512_set1_ps(max);
  for (; j + 16 <= n; j += 16) {
    const __m512 e = NAME(vexp16)(_mm512_sub_ps(_mm512_loadu_ps(sc + j), mv16));
    _mm512_storeu_ps(sc + j, e);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
  }
#endif
  int64_t j8;
  acc = _mm256_add_ps(acc, vexp_shifted_sum(sc + j, sc + j, n - j, max, &j8)); // 0 + e is e: the same sums
  j += j8;
  sum = hsum_f32_avx2(acc);
#endif
  for (; j < n; j++) { sc[j] = expf(sc[j] - max); sum += sc[j]; }
  p[0] = max; p[1] = sum;
}

/**
 * The partial softmax of query row t, for the `group` query heads of KV head kh, over keys
 * [j0, j1): per head, part = { m: max score, s: Σ e^(score − m), acc[hd]: Σ e^(score − m) v }
 * (heads hd + 2 floats apart). scratch: group · ATT_CHUNK scores + hd floats for a converted row.
 */
static void NAME(att_partial)(const att_t *a, int64_t t, int64_t kh, int64_t j0, int64_t j1, float *part, float *scratch) {
  const int64_t hd = a->headDim, g = a->nHeads / a->nKV, n = j1 - j0, stride = hd + 2;
  float *scores = scratch, *tmp = scratch + g * ATT_CHUNK;
  const float *q = a->q + (t * a->nHeads + kh * g) * hd;
  const uint8_t *k0 = a->k + j0 * a->rowBytes + kh * a->headBytes, *v0 = a->v + j0 * a->rowBytes + kh * a->headBytes;
#if IMPL_AVX2
  const int vec = hd % VL == 0; // AVX2: 8, AVX-512: 16 (else the row-at-a-time code: same bits)
  if (vec) NAME(att_scores_any)(a, k0, n, q, g, scores);
  else
#endif
  for (int64_t j = 0; j < n; j++) {
    const float *k = NAME(kv_row)(k0 + j * a->rowBytes, a->type, hd, tmp);
    for (int64_t h = 0; h < g; h++) scores[h * ATT_CHUNK + j] = NAME(att_dot)(q + h * hd, k, hd) * a->scale;
  }
  for (int64_t h = 0; h < g; h++) NAME(att_softmax)(a, scores + h * ATT_CHUNK, n, part + h * stride);
#if IMPL_AVX2
  if (vec) { NAME(att_values_any)(a, v0, n, scores, g, part + 2, stride, 0); return; }
#endif
  for (int64_t h = 0; h < g; h++) memset(part + h * stride + 2, 0, hd * sizeof(float));
  for (int64_t j = 0; j < n; j++) {
    const float *v = NAME(kv_row)(v0 + j * a->rowBytes, a->type, hd, tmp);
    for (int64_t h = 0; h < g; h++) NAME(att_axpy)(part + h * stride + 2, scores[h * ATT_CHUNK + j], v, hd);
  }
}

#if IMPL_AVX2
// att_partial for every KV head of keys [j0, j1) at once (the split path's chunk, vector path):
// the keys, then the values, are read ATT_BLOCK positions at a time, each block for every KV head
// in turn. A cached row holds every KV head's slice side by side, so the chunk is read front to
// back as one stream, where a pass per KV head walked it once per head with gaps between slices
// (that ran at half the bandwidth from memory: decode over a long cache). Each score, and each
// output lane's FMAs in key order (a block carries its sums on from the last), are att_partial's:
// the same bits. scratch: nHeads · ATT_CHUNK scores.
#define ATT_BLOCK 16
static void NAME(att_partial_heads)(const att_t *a, int64_t t, int64_t j0, int64_t j1, float *part, float *scores) {
  const int64_t hd = a->headDim, g = a->nHeads / a->nKV, n = j1 - j0, stride = hd + 2;
  const float *q = a->q + t * a->nHeads * hd;
  const uint8_t *k0 = a->k + j0 * a->rowBytes, *v0 = a->v + j0 * a->rowBytes;
  for (int64_t jb = 0; jb < n; jb += ATT_BLOCK) {
    const int64_t nb = n - jb < ATT_BLOCK ? n - jb : ATT_BLOCK;
    for (int64_t kh = 0; kh < a->nKV; kh++)
      NAME(att_scores_any)(a, k0 + jb * a->rowBytes + kh * a->headBytes, nb, q + kh * g * hd, g, scores + kh * g * ATT_CHUNK + jb);
  }
  for (int64_t h = 0; h < a->nHeads; h++) NAME(att_softmax)(a, scores + h * ATT_CHUNK, n, part + h * stride);
  for (int64_t jb = 0; jb < n; jb += ATT_BLOCK) {
    const int64_t nb = n - jb < ATT_BLOCK ? n - jb : ATT_BLOCK;
    for (int64_t kh = 0; kh < a->nKV; kh++)
      NAME(att_values_any)(a, v0 + jb * a->rowBytes + kh * a->headBytes, nb, scores + kh * g * ATT_CHUNK + jb, g, part + kh * g * stride + 2, stride, jb > 0);
  }
}
#undef ATT_BLOCK
#endif

// run ← run ⊕ part, the online-softmax merge of two partial results (run = { M, S, O[hd] }).
// A run with S = 0 is empty. Every path merges a row's chunks in ascending order with this.
static void NAME(att_merge)(float *run, const float *part, int64_t hd) {
  if (part[1] == 0.0f) return;
  if (run[1] == 0.0f) { memcpy(run, part, (hd + 2) * sizeof(float)); return; }
  const float m = run[0] > part[0] ? run[0] : part[0];
  const float a = expf(run[0] - m), b = expf(part[0] - m);
  run[0] = m;
  run[1] = run[1] * a + part[1] * b;
  float *o = run + 2;
  const float *x = part + 2;
  for (int64_t i = 0; i < hd; i++) o[i] = o[i] * a + x[i] * b;
}

// Whole rows: item = (t, kh); the chunks of the row's visible keys in order, merged as they go.
static void NAME(att_rows)(void *p, int64_t item, int ith) {
  const att_t *a = p;
  const int64_t t = item / a->nKV, kh = item % a->nKV, hd = a->headDim, g = a->nHeads / a->nKV, stride = hd + 2;
  float *scratch = pool_scratch(ith, 1, (size_t)(g * ATT_CHUNK + hd + 2 * g * stride) * sizeof(float));
  float *part = scratch + g * ATT_CHUNK + hd, *run = part + g * stride;
  for (int64_t h = 0; h < g; h++) run[h * stride + 1] = 0.0f;
  int64_t first, last;
  att_range(a, t, &first, &last);
  for (int64_t j0 = first; j0 <= last; j0 += ATT_CHUNK) {
    const int64_t j1 = j0 + ATT_CHUNK <= last + 1 ? j0 + ATT_CHUNK : last + 1;
    NAME(att_partial)(a, t, kh, j0, j1, part, scratch);
    for (int64_t h = 0; h < g; h++) NAME(att_merge)(run + h * stride, part + h * stride, hd);
  }
  for (int64_t h = 0; h < g; h++) att_finish(a, t, kh * g + h, run + h * stride);
}

// Split over positions: item = (t, chunk), every KV head in turn; each writes its partials to
// a->parts ((t, chunk, head) order).
static void NAME(att_chunks)(void *p, int64_t item, int ith) {
  const att_t *a = p;
  const int64_t c = item % a->nChunks, t = item / a->nChunks;
  const int64_t hd = a->headDim;
  float *part = a->parts + item * a->nHeads * (hd + 2);
  int64_t first, last;
  att_range(a, t, &first, &last);
  const int64_t j0 = first + c * ATT_CHUNK, j1 = j0 + ATT_CHUNK <= last + 1 ? j0 + ATT_CHUNK : last + 1;
  if (j1 <= j0) { for (int64_t h = 0; h < a->nHeads; h++) part[h * (hd + 2) + 1] = 0.0f; return; }
  const int64_t g = a->nHeads / a->nKV;
#if IMPL_AVX2
  if (hd % VL == 0) { NAME(att_partial_heads)(a, t, j0, j1, part, pool_scratch(ith, 1, (size_t)(a->nHeads * ATT_CHUNK) * sizeof(float))); return; }
#endif
  float *scratch = pool_scratch(ith, 1, (size_t)(g * ATT_CHUNK + hd) * sizeof(float));
  for (int64_t kh = 0; kh < a->nKV; kh++) NAME(att_partial)(a, t, kh, j0, j1, part + kh * g * (hd + 2), scratch);
}

// A batch of sequences (k_attention_batch): item → (segment, its own item number), then the
// one-sequence bodies above on that segment's att_t, so every row is computed as it is alone.
static void NAME(attb_rows)(void *p, int64_t item, int ith) {
  const attb_t *b = p;
  const int64_t s = attb_segment(b, item);
  NAME(att_rows)((void *)&b->segs[s], item - b->first[s], ith);
}
static void NAME(attb_chunks)(void *p, int64_t item, int ith) {
  const attb_t *b = p;
  const int64_t s = attb_segment(b, item);
  NAME(att_chunks)((void *)&b->segs[s], item - b->first[s], ith);
}

// n floats (whole rows) as `type`, the encoders of ggml: F16 rounds to nearest even (as F16C);
// Q8_0 per block of 32: d = amax / 127, q = round(x · (1/d)) half away from zero, d stored as F16.
static void NAME(kv_store)(const float *x, int64_t n, int type, uint8_t *dst) {
  if (type == T_F32) { memcpy(dst, x, (size_t)n * sizeof(float)); return; }
  int64_t i = 0;
  if (type == T_F16) {
    uint16_t *h = (uint16_t *)dst;
#if IMPL_AVX2
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; i++) h[i] = f32_to_f16(x[i]);
    return;
  }
  for (int64_t b = 0; b < n / 32; b++) {
    const float *v = x + b * 32;
    uint8_t *blk = dst + b * 34;
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) { const float a = fabsf(v[j]); if (a > amax) amax = a; }
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    memcpy(blk, &dh, 2);
    for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)roundf(v[j] * id);
  }
}

#if IMPL_AVX2
#undef ATT_HEADS
#undef VF
#undef VL
#undef ATT_LANES
#undef V_ZERO
#undef V_SET1
#undef V_FMA
#undef V_MUL
#undef V_LOADF
#undef V_STOREF
#undef V_LOADH
#undef V_LOADI8
#undef ATT_PREFETCH
#undef ATT_PREFETCH_HINT
#undef ATT_PF
#endif
