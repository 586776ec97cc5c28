// Matrix products over float weights (F32, F16, BF16) read in place, without a decoded copy of
// the row: VF_NW weight rows × NR activation rows (1 or 4) per call, so the rows' dot products
// run as independent chains (one chain alone waits on its FMA's latency) and each loaded weight
// vector serves NR activation rows. Every output is summed exactly as matmul_impl.h's dotf sums
// it: one 8-lane FMA chain over the columns, its horizontal sum, then the columns past a multiple
// of eight, so the bits are the same whatever NR, VF_NW, T or instruction set (batch invariance).
// Included by matmul.c once per SIMD region with VF(f) naming the copy and VF_NW set.

/** Eight weights at column i of a row, as floats (F16 through F16C, BF16 by a 16-bit shift). */
static inline __attribute__((always_inline)) __m256 VF(load8)(int type, const uint8_t *row, int64_t i) {
  if (type == T_F32) return _mm256_loadu_ps((const float *)row + i);
  const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
  if (type == T_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) float VF(load1)(int type, const uint8_t *row, int64_t i) {
  if (type == T_F32) return ((const float *)row)[i];
  const uint16_t h = ((const uint16_t *)row)[i];
  if (type == T_F16) return _cvtsh_ss(h);
  uint32_t b = (uint32_t)h << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/** out[r * ostride + i] = weight row i (w + i·rb) · x[r], for NW weight rows and NR activation rows. */
static inline __attribute__((always_inline)) void VF(kernel)(int type, const uint8_t *w, size_t rb, const float *const *x, int NW, int NR,
                                                             int64_t cols, float *out, int64_t ostride) {
  __m256 acc[VF_NW][4];
  for (int i = 0; i < NW; i++)
    for (int r = 0; r < NR; r++) acc[i][r] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    __m256 wv[VF_NW];
    for (int i = 0; i < NW; i++) wv[i] = VF(load8)(type, w + i * rb, c);
    for (int r = 0; r < NR; r++) {
      const __m256 xv = _mm256_loadu_ps(x[r] + c);
      for (int i = 0; i < NW; i++) acc[i][r] = _mm256_fmadd_ps(wv[i], xv, acc[i][r]);
    }
  }
  for (int i = 0; i < NW; i++)
    for (int r = 0; r < NR; r++) {
      float s = hsum_f32_avx2(acc[i][r]);
      for (int64_t k = c; k < cols; k++) s += VF(load1)(type, w + i * rb, k) * x[r][k];
      out[r * ostride + i] = s;
    }
}

#define VF_TYPED(T, tag) \
  static void VF(tag##_wide4)(const uint8_t *w, size_t rb, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rb, x, VF_NW, 4, cols, out, os); } \
  static void VF(tag##_one4)(const uint8_t *w, size_t rb, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rb, x, 1, 4, cols, out, os); } \
  static void VF(tag##_wide1)(const uint8_t *w, size_t rb, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rb, x, VF_NW, 1, cols, out, os); } \
  static void VF(tag##_one1)(const uint8_t *w, size_t rb, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rb, x, 1, 1, cols, out, os); }
VF_TYPED(T_F32, f32)
VF_TYPED(T_F16, f16)
VF_TYPED(T_BF16, bf16)
#undef VF_TYPED

typedef void (*vf_fn)(const uint8_t *, size_t, const float *const *, int64_t, float *, int64_t);

/** The rows of one chunk (VD_ROWS) times every activation row: VF_NW weight rows at a time, four
 *  activation rows at a time while four remain. */
static void VF(chunk)(void *p, int64_t blk, int ith) {
  (void)ith;
  const mm_t *m = p;
  vf_fn f[4]; // wide×4, one×4, wide×1, one×1
  switch (m->type) {
    case T_F32: f[0] = VF(f32_wide4); f[1] = VF(f32_one4); f[2] = VF(f32_wide1); f[3] = VF(f32_one1); break;
    case T_F16: f[0] = VF(f16_wide4); f[1] = VF(f16_one4); f[2] = VF(f16_wide1); f[3] = VF(f16_one1); break;
    default: f[0] = VF(bf16_wide4); f[1] = VF(bf16_one4); f[2] = VF(bf16_wide1); f[3] = VF(bf16_one1); break;
  }
  const int64_t cols = m->cols, rows = m->rows, r0 = blk * VD_ROWS, r1 = r0 + VD_ROWS < rows ? r0 + VD_ROWS : rows;
  int64_t t = 0;
  for (; t + 4 <= m->T; t += 4) {
    const float *xs[4] = { m->x + t * cols, m->x + (t + 1) * cols, m->x + (t + 2) * cols, m->x + (t + 3) * cols };
    float *out = m->out + t * rows;
    int64_t r = r0;
    for (; r + VF_NW <= r1; r += VF_NW) f[0](m->w + r * m->rb, m->rb, xs, cols, out + r, rows);
    for (; r < r1; r++) f[1](m->w + r * m->rb, m->rb, xs, cols, out + r, rows);
  }
  // Decode (T ≤ 3) takes one weight row at a time: one memory stream, which the hardware
  // prefetcher follows (VF_NW rows side by side ran at half the bandwidth from memory on Zen 4).
  const int stream = m->T <= 3;
  for (; t < m->T; t++) {
    const float *xs[1] = { m->x + t * cols };
    float *out = m->out + t * rows;
    int64_t r = r0;
    if (!stream) for (; r + VF_NW <= r1; r += VF_NW) f[2](m->w + r * m->rb, m->rb, xs, cols, out + r, rows);
    for (; r < r1; r++) f[3](m->w + r * m->rb, m->rb, xs, cols, out + r, rows);
  }
}
