// Matrix products over BF16 weights with AVX512-BF16: the activations are rounded to bf16 first
// (llama.cpp's vec_dot_type for BF16, GGML_FP32_TO_BF16's rounding), and `vdpbf16ps` multiplies
// 32 weight × activation pairs per instruction, twice the products of a float32 FMA. Every output
// is summed as llama.cpp's tinyBLAS sums a BF16 product (KN = 32): one 16-lane accumulator over
// the columns in steps of 32, each lane adding its two products, then `_mm512_reduce_add_ps`;
// columns past a multiple of 32 are added after it, one product at a time (tinyBLAS leaves such
// rows to ggml's vec_dot; toy keeps one kernel). The order is the same whatever T, NW or NR, so
// a row's bits do not depend on the batch (batch invariance).
// Included by matmul.c inside a target("…,avx512bf16") region; BF_NW weight rows per call.
// 4 weight rows × 4 activation rows: 16 accumulators of AVX-512's 32 registers (CPU time per
// product on SmolLM2's shapes, T = 128: 4 × 6 2% and 2 × 8 9% slower).
#define BF_NW 4
#define BF_NR 4

/** GGML_FP32_TO_BF16 on 16 floats: round to nearest even; a NaN stays a (quiet) NaN. */
static inline __m256i bf16_round16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(64));
  return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet));
}

static inline uint16_t bf16_round1(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 64);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/** Activation row t as bf16 into m->xq (row stride m->xstride bytes). */
static void bf16_round_chunk(void *p, int64_t t, int ith) {
  (void)ith;
  const mm_t *m = p;
  const float *x = m->x + t * m->cols;
  uint16_t *y = (uint16_t *)(m->xq + t * m->xstride);
  int64_t c = 0;
  for (; c + 16 <= m->cols; c += 16) _mm256_storeu_si256((__m256i *)(y + c), bf16_round16(_mm512_loadu_ps(x + c)));
  for (; c < m->cols; c++) y[c] = bf16_round1(x[c]);
}

/** The horizontal sums of 16 accumulators at once: lane 4q + k is the sum of a[4k + q]'s 16 lanes,
 *  added in exactly `_mm512_reduce_add_ps`'s order (GCC's: lanes j + j+8, then k + k+4, then
 *  k + k+2, then the last two) so the bits equal a one-at-a-time reduce, with each shuffle and add
 *  serving two to eight sums: ~46 instructions for 16 sums instead of ~140. Floating-point
 *  addition is commutative, so only the pairing must match. */
static inline __attribute__((always_inline)) __m512 bf_reduce16(const __m512 *a) {
  __m512 h[8], q[4], e[2];
  for (int k = 0; k < 8; k++) // [a(2k) j + j+8 | a(2k+1) j + j+8], j < 8
    h[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44), _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xee));
  for (int k = 0; k < 4; k++) // four sums a 128-bit lane each, lanes k + k+4
    q[k] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * k], h[2 * k + 1], 0x88), _mm512_shuffle_f32x4(h[2 * k], h[2 * k + 1], 0xdd));
  for (int k = 0; k < 2; k++) // in each 128-bit lane: [x0+x2, x1+x3] of two sums
    e[k] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * k], q[2 * k + 1], 0x44), _mm512_shuffle_ps(q[2 * k], q[2 * k + 1], 0xee));
  return _mm512_add_ps(_mm512_shuffle_ps(e[0], e[1], 0x88), _mm512_shuffle_ps(e[0], e[1], 0xdd));
}

/** out[r * ostride + i] = weight row i · x[r] for NW weight rows and NR bf16 activation rows. The
 *  32 weights of row i at columns 32k.. are at w + i·rs + k·us (see VF(kernel) in vecdot_float.h;
 *  repacked: 32-value blocks). */
static inline __attribute__((always_inline)) void bf_kernel(const uint8_t *w, size_t rs, size_t us, const uint16_t *const *x,
                                                            int NW, int NR, int64_t cols, float *out, int64_t ostride) {
  __m512 acc[BF_NW > 8 ? BF_NW : 8][BF_NR > 4 ? BF_NR : 4];
  for (int i = 0; i < NW; i++)
    for (int r = 0; r < NR; r++) acc[i][r] = _mm512_setzero_ps();
  int64_t c = 0;
  const uint8_t *wc = w;
  for (; c + 32 <= cols; c += 32, wc += us) {
    if (NR == 1 && (NW == 1 || rs < us)) stream_prefetch_l2(wc, us); // decode, one stream (prefetch.h: into L2 on every CPU)
    __m512bh wv[8];
    for (int i = 0; i < NW; i++) wv[i] = (__m512bh)_mm512_loadu_si512((const void *)(wc + i * rs));
    for (int r = 0; r < NR; r++) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512((const void *)(x[r] + c));
      for (int i = 0; i < NW; i++) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], wv[i], xv);
    }
  }
  if (NW == 4 && NR == 4 && c == cols) { // a prompt's 4 × 4 tile: its 16 sums together
    __m512 a[16];
    for (int i = 0; i < 4; i++)
      for (int r = 0; r < 4; r++) a[4 * i + r] = acc[i][r];
    const __m512 s = bf_reduce16(a); // 128-bit lane r: row r's four outputs
    for (int r = 0; r < 4; r++) _mm_storeu_ps(out + r * ostride, _mm512_extractf32x4_ps(s, r));
    return;
  }
  for (int i = 0; i < NW; i++)
    for (int r = 0; r < NR; r++) {
      float s = _mm512_reduce_add_ps(acc[i][r]);
      const uint16_t *row = (const uint16_t *)(w + i * rs); // columns past 32k: file layout only
      for (int64_t k = c; k < cols; k++) s += bf16_to_f32(row[k]) * bf16_to_f32(x[r][k]);
      out[r * ostride + i] = s;
    }
}

typedef void (*bf_fn)(const uint8_t *, size_t, size_t, const uint16_t *const *, int64_t, float *, int64_t);
static void bf_wide4(const uint8_t *w, size_t rs, size_t us, const uint16_t *const *x, int64_t cols, float *out, int64_t os) { bf_kernel(w, rs, us, x, BF_NW, BF_NR, cols, out, os); }
static void bf_one4(const uint8_t *w, size_t rs, size_t us, const uint16_t *const *x, int64_t cols, float *out, int64_t os) { bf_kernel(w, rs, us, x, 1, BF_NR, cols, out, os); }
static void bf_eight1(const uint8_t *w, size_t rs, size_t us, const uint16_t *const *x, int64_t cols, float *out, int64_t os) { bf_kernel(w, rs, us, x, 8, 1, cols, out, os); }
static void bf_wide1(const uint8_t *w, size_t rs, size_t us, const uint16_t *const *x, int64_t cols, float *out, int64_t os) { bf_kernel(w, rs, us, x, BF_NW, 1, cols, out, os); }
static void bf_one1(const uint8_t *w, size_t rs, size_t us, const uint16_t *const *x, int64_t cols, float *out, int64_t os) { bf_kernel(w, rs, us, x, 1, 1, cols, out, os); }

/** The rows of one chunk (VD_ROWS) times every activation row, as VF(chunk) walks them: BF_NW
 *  weight rows × four activation rows while four remain; decode eight repacked rows (one stream)
 *  or one file row at a time. The repacked layout (m->packed) stores each group of eight rows in
 *  32-value blocks (64 bytes) interleaved, and then cols is a multiple of 32. */
static void bf_chunk(void *p, int64_t blk, int ith) {
  (void)ith;
  const mm_t *m = p;
  const int64_t cols = m->cols, rows = m->rows, r0 = blk * VD_ROWS, r1 = r0 + VD_ROWS < rows ? r0 + VD_ROWS : rows;
  const size_t bs = 64;
  const int64_t packed_rows = m->packed ? rows / 8 * 8 : 0;
#define ROW(r) (r < packed_rows ? m->w + (r - r % 8) * m->rb + (r % 8) * bs : m->w + r * m->rb)
#define RS(r) (r < packed_rows ? bs : m->rb)
#define US(r) (r < packed_rows ? 8 * bs : bs)
#define XROW(t) ((const uint16_t *)(m->xq + (t) * m->xstride))
  int64_t t = 0;
  for (; t + BF_NR <= m->T; t += BF_NR) {
    const uint16_t *xs[BF_NR];
    for (int k = 0; k < BF_NR; k++) xs[k] = XROW(t + k);
    float *out = m->out + t * rows;
    int64_t r = r0;
    for (; r + BF_NW <= r1; r += BF_NW) bf_wide4(ROW(r), RS(r), US(r), xs, cols, out + r, rows);
    for (; r < r1; r++) bf_one4(ROW(r), RS(r), US(r), xs, cols, out + r, rows);
  }
  for (; t < m->T; t++) {
    const uint16_t *xs[1] = { XROW(t) };
    float *out = m->out + t * rows;
    int64_t r = r0;
    if (m->T > 3) for (; r + BF_NW <= r1; r += BF_NW) bf_wide1(ROW(r), RS(r), US(r), xs, cols, out + r, rows);
    for (; r + 8 <= r1 && r + 8 <= packed_rows; r += 8) bf_eight1(ROW(r), RS(r), US(r), xs, cols, out + r, rows);
    for (; r < r1; r++) bf_one1(ROW(r), RS(r), US(r), xs, cols, out + r, rows);
  }
#undef ROW
#undef RS
#undef US
#undef XROW
}
