// Fused decode dot products with AVX-512 VNNI (Q4_1 and Q8_0, SmolLM2's weights, and Q4_0), eight
// rows at a time. Included by matmul.c inside its AVX-512 target region, after vecdot_avx2.h;
// selected at run time (toy_has_vnni), the AVX2 kernels stay for every other CPU and type.
//
// Same bits as the AVX2 kernels (test/cpu-backend.test.ts checks it), because every float
// operation per row is the same one in the same order:
// - vpdpbusd sums 4 consecutive u8 × s8 products into an int32 lane, exactly what AVX2's
//   maddubs + madd(1) give lane by lane (no int16 saturation there: |pair| ≤ 2·128·127);
// - two rows share a 512-bit register, one per 256-bit half, so each half is the AVX2 kernel's
//   accumulator for its row: acc = fma(d·dx, float(Σ), acc), block after block;
// - the per-row scalars (d·dx, the Q4_1 offset sum m·s) are computed for the eight rows in one
//   vector: the same multiply and add per lane as the scalar code (no fused multiply–add there,
//   the addon is compiled without fp contraction);
// - each row ends with hsum_f32_avx2 on its half (+ the offset sum), as the AVX2 kernel does.
// What is gained: one instruction for the integer dot, half the vector instructions (two rows
// per register), the eight rows' scales in one vector, and four independent accumulator chains.

#define VNNI_ROWS 8

/** The 32-bit words at the start of eight rows' blocks (b, b + rb, …): low half d, high half
 *  the next two bytes. Eight scalar loads: a gather instruction is slower on AMD's cores. */
static inline __m256i vnni_heads(const uint8_t *b, size_t rb) {
  int32_t v[8];
  for (int r = 0; r < 8; r++) memcpy(&v[r], b + r * rb, 4);
  return _mm256_loadu_si256((const __m256i *)v);
}

/** Eight rows read side by side are a pattern the hardware prefetcher misses (a third of the
 *  bandwidth on the 30 MB output matrix), so each block step asks for its share of the lines
 *  of the group VNNI_AHEAD groups further on. */
#ifndef VNNI_AHEAD
#define VNNI_AHEAD 2
#endif
static inline void vnni_prefetch(const uint8_t *w, size_t rb, int64_t nu, int64_t u) {
  const int64_t per = (int64_t)(8 * rb + 64 * nu - 1) / (64 * nu); // lines per block step
  const char *next = (const char *)w + VNNI_AHEAD * 8 * rb;
  for (int64_t k = u * per; k < (u + 1) * per; k++) _mm_prefetch(next + 64 * k, _MM_HINT_T0);
}

/** Scales of rows 2p and 2p+1 (lanes of s), each repeated over its half of a 512-bit vector. */
static inline __m512 vnni_pair_scale(__m256 s, int p) {
  const __m512i idx = _mm512_set_epi32(2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                       2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p);
  return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(s));
}

/** Two 16-byte loads → one 32-byte value per half (a 128-bit lane each in both halves). */
static inline __m512i vnni_two_x16(const uint8_t *a, const uint8_t *b) {
  const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)a));
  const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/** Stores each row's result: the AVX2 kernel's horizontal sum of its half. */
static inline void vnni_finish(__m512 a0, __m512 a1, __m512 a2, __m512 a3, float *out) {
  const __m512 acc[4] = { a0, a1, a2, a3 };
  for (int p = 0; p < 4; p++) {
    out[2 * p] = hsum_f32_avx2(_mm512_castps512_ps256(acc[p]));
    out[2 * p + 1] = hsum_f32_avx2(_mm512_extractf32x8_ps(acc[p], 1));
  }
}

/** Rows w, w + rb, …, w + 7·rb (Q4_1) times x: out[i] = row i · x, as vd_q4_1 computes it. */
static void vnni_q4_1_x8(const uint8_t *w, size_t rb, const xrow_t *x, int64_t nu, float *out) {
  // Nibbles: 128-bit lanes hold row 2p's bytes, twice, then row 2p+1's; the odd lanes shift by 4.
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0; // named: arrays end up on the stack
  __m256 offs = _mm256_setzero_ps();
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + 20 * u;
    vnni_prefetch(w, rb, nu, u);
    const __m256i dm = vnni_heads(b, rb);
    const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(dm)), m = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(_mm256_srli_epi32(dm, 16)));
    offs = _mm256_add_ps(offs, _mm256_mul_ps(m, _mm256_set1_ps(x->fs[2 * u])));
    const __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(x->dx[u]));
    const __m512i xq = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->q + 32 * u)));
#define PAIR(acc, p) do { \
      const __m512i q = _mm512_and_si512(_mm512_srlv_epi16(vnni_two_x16(b + 4 + 2 * (p) * rb, b + 4 + (2 * (p) + 1) * rb), counts), m4); \
      const __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, xq); \
      acc = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(sum), acc); \
    } while (0)
    PAIR(a0, 0); PAIR(a1, 1); PAIR(a2, 2); PAIR(a3, 3);
#undef PAIR
  }
  float e[8];
  _mm256_storeu_ps(e, offs);
  vnni_finish(a0, a1, a2, a3, out);
  for (int r = 0; r < 8; r++) out[r] += e[r]; // + offsets, as vd_q4_1 ends
}

/** |q| × (x with q's sign) summed per 4 bytes: AVX2's sign trick for signed × signed, as vd_ss
 *  computes it (q = 0 gives 0 either way). */
static inline __m512i vnni_ss(__m512i q, __m512i xq) {
  const __m512i xs = _mm512_mask_sub_epi8(xq, _mm512_movepi8_mask(q), _mm512_setzero_si512(), xq);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), xs);
}

/** Rows w, w + rb, …, w + 7·rb (Q4_0) times x, as vd_q4_0 computes it. */
static void vnni_q4_0_x8(const uint8_t *w, size_t rb, const xrow_t *x, int64_t nu, float *out) {
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + 18 * u;
    vnni_prefetch(w, rb, nu, u);
    const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_cvtepi32_epi16(vnni_heads(b, rb))), _mm256_set1_ps(x->dx[u]));
    const __m512i xq = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->q + 32 * u)));
#define PAIR(acc, p) do { \
      const __m512i nib = _mm512_and_si512(_mm512_srlv_epi16(vnni_two_x16(b + 2 + 2 * (p) * rb, b + 2 + (2 * (p) + 1) * rb), counts), m4); \
      acc = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(vnni_ss(_mm512_sub_epi8(nib, eight), xq)), acc); \
    } while (0)
    PAIR(a0, 0); PAIR(a1, 1); PAIR(a2, 2); PAIR(a3, 3);
#undef PAIR
  }
  vnni_finish(a0, a1, a2, a3, out);
}

/** Rows w, w + rb, …, w + 7·rb (Q8_0) times x, as vd_q8_0 computes it. */
static void vnni_q8_0_x8(const uint8_t *w, size_t rb, const xrow_t *x, int64_t nu, float *out) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + 34 * u;
    vnni_prefetch(w, rb, nu, u);
    const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(vnni_heads(b, rb)));
    const __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(x->dx[u]));
    const __m512i xq = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->q + 32 * u)));
#define PAIR(acc, p) do { \
      const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b + 2 + 2 * (p) * rb))), \
                                           _mm256_loadu_si256((const __m256i *)(b + 2 + (2 * (p) + 1) * rb)), 1); \
      acc = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(vnni_ss(q, xq)), acc); \
    } while (0)
    PAIR(a0, 0); PAIR(a1, 1); PAIR(a2, 2); PAIR(a3, 3);
#undef PAIR
  }
  vnni_finish(a0, a1, a2, a3, out);
}

typedef void (*vnni_fn)(const uint8_t *, size_t, const xrow_t *, int64_t, float *);

static vnni_fn vnni_for(int type) {
  switch (type) {
    case T_Q4_0: return vnni_q4_0_x8;
    case T_Q4_1: return vnni_q4_1_x8;
    case T_Q8_0: return vnni_q8_0_x8;
    default: return NULL;
  }
}

/** vd_chunk with eight rows per call; rows past a multiple of eight take the AVX2 kernel. */
static void vnni_chunk(void *p, int64_t blk, int ith) {
  (void)ith;
  const mm_t *m = p;
  const vnni_fn f8 = vnni_for(m->type);
  const vd_fn f1 = vd_for(m->type);
  const int64_t nu = m->cols / 32, r0 = blk * VD_ROWS, r1 = r0 + VD_ROWS < m->rows ? r0 + VD_ROWS : m->rows;
  for (int64_t t = 0; t < m->T; t++) {
    const xrow_t xr = xrow_at(m, t);
    float *out = m->out + t * m->rows;
    int64_t r = r0;
    for (; r + VNNI_ROWS <= r1; r += VNNI_ROWS) f8(m->w + r * m->rb, m->rb, &xr, nu, out + r);
    for (; r < r1; r++) out[r] = f1(m->w + r * m->rb, &xr, nu);
  }
}
