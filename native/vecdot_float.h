// Matrix products over float weights (F32, F16, BF16) read in place, without a decoded copy of
// the row: VF_NW weight rows × NR activation rows (1 or 4) per call, so the rows' dot products
// run as independent chains (one chain alone waits on its FMA's latency) and each loaded weight
// vector serves NR activation rows. Every output is summed exactly as matmul_impl.h's dotf sums
// it: one 8-lane FMA chain over the columns, its horizontal sum, then the columns past a multiple
// of eight, so the bits are the same whatever NR, VF_NW, T or instruction set (batch invariance).
// Included by matmul.c once per SIMD region with VF(f) naming the copy and VF_NW set.

/** Eight weights at p, as floats (F16 through F16C, BF16 by a 16-bit shift). */
static inline __attribute__((always_inline)) __m256 VF(load8)(int type, const uint8_t *p) {
  if (type == T_F32) return _mm256_loadu_ps((const float *)p);
  const __m128i h = _mm_loadu_si128((const __m128i *)p);
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

/** out[r * ostride + i] = weight row i · x[r], for NW weight rows and NR activation rows. The eight
 *  weights of row i at columns 8k.. are at w + i·rs + k·us: the file's layout (rs = the row's
 *  bytes, us = 8 values) or the repacked one (rs = 8 values, us = 8 rows of 8 values, and then
 *  cols is a multiple of 8). */
static inline __attribute__((always_inline)) void VF(kernel)(int type, const uint8_t *w, size_t rs, size_t us, const float *const *x,
                                                             int NW, int NR, int64_t cols, float *out, int64_t ostride) {
  __m256 acc[8][4];
  for (int i = 0; i < NW; i++)
    for (int r = 0; r < NR; r++) acc[i][r] = _mm256_setzero_ps();
  int64_t c = 0;
  const uint8_t *wc = w;
  for (; c + 8 <= cols; c += 8, wc += us) {
    if (NR == 1 && (NW == 1 || rs < us)) stream_prefetch_wide(wc, us); // decode, one stream (prefetch.h)
    __m256 wv[8];
    for (int i = 0; i < NW; i++) wv[i] = VF(load8)(type, wc + i * rs);
    for (int r = 0; r < NR; r++) {
      const __m256 xv = _mm256_loadu_ps(x[r] + c);
      for (int i = 0; i < NW; i++) acc[i][r] = _mm256_fmadd_ps(wv[i], xv, acc[i][r]);
    }
  }
  for (int i = 0; i < NW; i++)
    for (int r = 0; r < NR; r++) {
      float s = hsum_f32_avx2(acc[i][r]);
      for (int64_t k = c; k < cols; k++) s += VF(load1)(type, w + i * rs, k) * x[r][k];
      out[r * ostride + i] = s;
    }
}

#ifdef VF_PAIRS
/** Sixteen weights at p, as floats: the eight of one row and the eight of the next. */
static inline __attribute__((always_inline)) __m512 VF(load16)(int type, const uint8_t *p) {
  if (type == T_F32) return _mm512_loadu_ps((const float *)p);
  const __m256i h = _mm256_loadu_si256((const __m256i *)p);
  if (type == T_F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/** VF(kernel) for one group of eight repacked rows × NR (1, 4 or 6) activation rows, two weight rows per
 *  512-bit register: on the repacked layout the eight values of rows 2p and 2p + 1 at columns
 *  8k.. lie side by side, so one load holds both, and each 256-bit half runs VF(kernel)'s 8-lane
 *  chain for its row (the activation's eight values broadcast to both halves). The same bits,
 *  half the FMA instructions: where the FMA units are 512 bits wide (Intel Xeon) the prompt's
 *  float products ran at up to twice the rate of 256-bit ones. F32 decode, the one decode that
 *  takes this kernel, prefetches in software only where that was faster (stream_prefetch_f32,
 *  prefetch.h). */
static inline __attribute__((always_inline)) void VF(kernel_pairs)(int type, const uint8_t *w, size_t bs, const float *const *x,
                                                                   int NR, int64_t cols, float *out, int64_t ostride) {
  __m512 acc[4][6]; // six activation rows: 24 accumulators, 4 weight registers and x's of AVX-512's 32
  for (int p = 0; p < 4; p++)
    for (int r = 0; r < NR; r++) acc[p][r] = _mm512_setzero_ps();
  const uint8_t *wc = w;
  for (int64_t c = 0; c < cols; c += 8, wc += 8 * bs) {
    __m512 wv[4];
    if (NR == 1) stream_prefetch_f32(wc, 8 * bs); // decode (prefetch.h)
    for (int p = 0; p < 4; p++) wv[p] = VF(load16)(type, wc + 2 * p * bs);
    for (int r = 0; r < NR; r++) {
      const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(x[r] + c));
      for (int p = 0; p < 4; p++) acc[p][r] = _mm512_fmadd_ps(wv[p], xv, acc[p][r]);
    }
  }
  for (int p = 0; p < 4; p++)
    for (int r = 0; r < NR; r++) {
      out[r * ostride + 2 * p] = hsum_f32_avx2(_mm512_castps512_ps256(acc[p][r]));
      out[r * ostride + 2 * p + 1] = hsum_f32_avx2(_mm512_extractf32x8_ps(acc[p][r], 1));
    }
}
#define VF_PAIRS_TYPED(T, tag) \
  static void VF(tag##_pairs4)(const uint8_t *w, size_t bs, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel_pairs)(T, w, bs, x, 4, cols, out, os); } \
  static void VF(tag##_pairs6)(const uint8_t *w, size_t bs, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel_pairs)(T, w, bs, x, 6, cols, out, os); }
VF_PAIRS_TYPED(T_F32, f32)
VF_PAIRS_TYPED(T_F16, f16)
VF_PAIRS_TYPED(T_BF16, bf16)
#undef VF_PAIRS_TYPED
static void VF(f32_pairs1)(const uint8_t *w, size_t bs, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel_pairs)(T_F32, w, bs, x, 1, cols, out, os); }
#endif

#define VF_TYPED(T, tag) \
  static void VF(tag##_wide4)(const uint8_t *w, size_t rs, size_t us, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rs, us, x, VF_NW, 4, cols, out, os); } \
  static void VF(tag##_one4)(const uint8_t *w, size_t rs, size_t us, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rs, us, x, 1, 4, cols, out, os); } \
  static void VF(tag##_eight1)(const uint8_t *w, size_t rs, size_t us, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rs, us, x, 8, 1, cols, out, os); } \
  static void VF(tag##_wide1)(const uint8_t *w, size_t rs, size_t us, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rs, us, x, VF_NW, 1, cols, out, os); } \
  static void VF(tag##_one1)(const uint8_t *w, size_t rs, size_t us, const float *const *x, int64_t cols, float *out, int64_t os) { VF(kernel)(T, w, rs, us, x, 1, 1, cols, out, os); }
VF_TYPED(T_F32, f32)
VF_TYPED(T_F16, f16)
VF_TYPED(T_BF16, bf16)
#undef VF_TYPED

typedef void (*vf_fn)(const uint8_t *, size_t, size_t, const float *const *, int64_t, float *, int64_t);

/** The rows of one chunk (VD_ROWS) times every activation row: VF_NW weight rows at a time (a
 *  repacked group of eight with AVX-512), six or four activation rows at a time while they remain. Decode (T ≤ 3) on the file's layout takes one
 *  weight row at a time: one memory stream, which the hardware prefetcher follows (rows read
 *  side by side ran at half the bandwidth from memory on Zen 4); on the repacked layout
 *  (m->packed, k_repack) eight rows at a time, still one stream. */
static void VF(chunk)(void *p, int64_t blk, int ith) {
  (void)ith;
  const mm_t *m = p;
  vf_fn f[5]; // wide×4, one×4, eight×1, one×1, wide×1
  switch (m->type) {
    case T_F32: f[0] = VF(f32_wide4); f[1] = VF(f32_one4); f[2] = VF(f32_eight1); f[3] = VF(f32_one1); f[4] = VF(f32_wide1); break;
    case T_F16: f[0] = VF(f16_wide4); f[1] = VF(f16_one4); f[2] = VF(f16_eight1); f[3] = VF(f16_one1); f[4] = VF(f16_wide1); break;
    default: f[0] = VF(bf16_wide4); f[1] = VF(bf16_one4); f[2] = VF(bf16_eight1); f[3] = VF(bf16_one1); f[4] = VF(bf16_wide1); break;
  }
  const int64_t cols = m->cols, rows = m->rows, r0 = blk * VD_ROWS, r1 = r0 + VD_ROWS < rows ? r0 + VD_ROWS : rows;
  const size_t es = m->type == T_F32 ? 4 : 2, bs = 8 * es;
  const int64_t packed_rows = m->packed ? rows / 8 * 8 : 0;
#ifdef VF_PAIRS
  void (*pairs)(const uint8_t *, size_t, const float *const *, int64_t, float *, int64_t) =
    m->type == T_F32 ? VF(f32_pairs4) : m->type == T_F16 ? VF(f16_pairs4) : VF(bf16_pairs4);
  // Decode on F32 rows too (1 thread: 24 → 28 t/s on Intel Xeon); F16 decode ran no faster
  // with it (its 512-bit conversions cost two µops), so it keeps eight 256-bit chains.
  const int decode_pairs = m->type == T_F32;
#endif
  // Where row r starts, and the strides (see VF(kernel)).
#define ROW(r) (r < packed_rows ? m->w + (r - r % 8) * m->rb + (r % 8) * bs : m->w + r * m->rb)
#define RS(r) (r < packed_rows ? bs : m->rb)
#define US(r) (r < packed_rows ? 8 * bs : bs)
  int64_t t = 0;
#ifdef VF_PAIRS
  // Six activation rows per pass over a group's weights where the group is repacked: each weight
  // vector loaded (from L2: a chunk's rows outgrow L1) serves six rows instead of four.
  void (*pairs6)(const uint8_t *, size_t, const float *const *, int64_t, float *, int64_t) =
    m->type == T_F32 ? VF(f32_pairs6) : m->type == T_F16 ? VF(f16_pairs6) : VF(bf16_pairs6);
  if (r1 <= packed_rows)
    for (; t + 6 <= m->T; t += 6) {
      const float *xs[6];
      for (int k = 0; k < 6; k++) xs[k] = m->x + (t + k) * cols;
      for (int64_t r = r0; r < r1; r += 8) pairs6(ROW(r), bs, xs, cols, m->out + t * rows + r, rows);
    }
#endif
  for (; t + 4 <= m->T; t += 4) {
    const float *xs[4] = { m->x + t * cols, m->x + (t + 1) * cols, m->x + (t + 2) * cols, m->x + (t + 3) * cols };
    float *out = m->out + t * rows;
    int64_t r = r0;
#ifdef VF_PAIRS
    // r0 is a multiple of VD_ROWS, so r stays at the start of a packed group of eight.
    for (; r + 8 <= r1 && r + 8 <= packed_rows; r += 8) pairs(ROW(r), bs, xs, cols, out + r, rows);
#endif
    // VF_NW divides 8: a group of VF_NW rows never straddles the packed rows' end.
    for (; r + VF_NW <= r1; r += VF_NW) f[0](ROW(r), RS(r), US(r), xs, cols, out + r, rows);
    for (; r < r1; r++) f[1](ROW(r), RS(r), US(r), xs, cols, out + r, rows);
  }
  for (; t < m->T; t++) {
    const float *xs[1] = { m->x + t * cols };
    float *out = m->out + t * rows;
    int64_t r = r0;
    if (m->T > 3) for (; r + VF_NW <= r1; r += VF_NW) f[4](ROW(r), RS(r), US(r), xs, cols, out + r, rows); // prompt: rows from cache
#ifdef VF_PAIRS
    if (decode_pairs) for (; r + 8 <= r1 && r + 8 <= packed_rows; r += 8) VF(f32_pairs1)(ROW(r), bs, xs, cols, out + r, rows);
#endif
    for (; r + 8 <= r1 && r + 8 <= packed_rows; r += 8) f[2](ROW(r), RS(r), US(r), xs, cols, out + r, rows);
    for (; r < r1; r++) f[3](ROW(r), RS(r), US(r), xs, cols, out + r, rows);
  }
#undef ROW
#undef RS
#undef US
}
