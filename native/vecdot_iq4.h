// IQ4_NL and IQ4_XS matmul: weight blocks read in place, for every T. Compiled three times by
// matmul.c, next to matmul_impl.h: portable C (IMPL_AVX2 0), AVX2 (1), AVX-512 VNNI (IMPL_VNNI 1);
// NAME(f) gives each copy its own symbol. All three give the same bits.
//
// Block layouts (ggml-common.h): iq4_nl {d; qs[16]}, 32 values; iq4_xs {d; scales_h (u16);
// scales_l[4]; qs[128]}, 256 values in 8 sub-blocks of 32 with 6-bit scales ls (x = d·(ls−32)·K[q]).
// A 4-bit code q indexes the codebook K = kvalues_iq4nl; in a 32-value (sub-)block, byte j holds
// value j (low nibble) and value j + 16 (high nibble). Decoding is a 16-byte table lookup
// (pshufb with K as the table), as llama.cpp does.
//
// The activations are quantized as llama.cpp does for these types (quantize_x: Q8_0 for IQ4_NL,
// Q8_K for IQ4_XS), and each output is accumulated in the order of the llama.cpp kernel that
// computes that product (source of 2026-10-01, x86 with AVX2/AVX-512, default settings: weight
// repacking on, llamafile on, tiled K-quant path on). Integer sums are exact whatever their
// grouping, so only the float steps below have to be kept. llama.cpp picks its kernel by the
// number of activation rows T; toy takes one order per weight whatever T, so that a row's bits do
// not depend on the batch it is served in (batch invariance), and follows llama.cpp's prompt path:
//   IQ4_NL, weights with rows % 8 == 0 (llama.cpp repacks them, ggml-cpu/repack.cpp, and runs
//     gemv/gemm_iq4_nl_8x8 for every T): per output, acc = fma(float(Σ K·x of block b), d·dx, acc)
//     over the blocks, one scalar chain (iq4_nl_chain);
//   IQ4_NL, other row counts: llamafile's tinyBLAS_Q0_AVX (llama.cpp's order for T ≥ 2; its one-row
//     vec_dot splits even and odd blocks into two accumulators) — one 8-lane accumulator,
//     acc = fma(d·dx, Σ lane, acc), then hsum (iq4_nl_tiny);
//   IQ4_XS: ggml-cpu/tiled (llama.cpp's batched K-quant/IQ path, T ≥ 8; its T < 8 vec_dot sums
//     lanes first) — per super-block the integer S = Σ_ib (ls−32)·Σ K·x, then
//     out = fma(float(S)·d, dx, out), from 0 (iq4_xs_tiled).
// Checked by feeding llama.cpp's own intermediate tensors (dumped with an eval callback from the
// same source, which reproduces refs/llamacpp to 5e-7) through these kernels: every output of
// every IQ4 matmul of the llama-q-IQ4_NL/_XS prompts is bit-identical.

#ifndef TOY_IQ4_COMMON
#define TOY_IQ4_COMMON
static const int8_t iq4_kvalues[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
#define IQ4_NL_BYTES 18
#define IQ4_XS_BYTES 136
#define IQ4_ROWS 16 // weight rows per chunk
#define IQ4_NT 64    // activation rows per pass of the eight-row kernels
/** ggml's hsum_float_8, in scalar form: (l0+l4, l1+l5, l2+l6, l3+l7), then pairs, then the two. */
static inline float iq4_hsum8(const float *a) {
  const float s0 = a[4] + a[0], s1 = a[5] + a[1], s2 = a[6] + a[2], s3 = a[7] + a[3];
  return (s0 + s2) + (s1 + s3);
}
/** The 6-bit scale of sub-block ib of an IQ4_XS super-block, minus 32. */
static inline int iq4_xs_scale(const uint8_t *blk, int ib) {
  const int h = blk[2] | (blk[3] << 8);
  return (((blk[4 + ib / 2] >> (4 * (ib & 1))) & 15) | (((h >> (2 * ib)) & 3) << 4)) - 32;
}
static inline uint16_t iq4_u16(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return h;
}
static inline float iq4_h2f(const uint8_t *p) { return f16_to_f32(iq4_u16(p)); }
#endif

// ---------------------------------------------------------------- portable

#if !IMPL_AVX2
/** The 8 integer lane sums of one 32-value block: lane l = Σ_{j=4l..4l+3} K[q_j]·x_j. */
static inline void iq4_lanes(const uint8_t *qs, const int8_t *x, int32_t *lane) {
  for (int l = 0; l < 8; l++) lane[l] = 0;
  for (int j = 0; j < 16; j++) {
    lane[j >> 2] += iq4_kvalues[qs[j] & 15] * x[j];
    lane[(j + 16) >> 2] += iq4_kvalues[qs[j] >> 4] * x[j + 16];
  }
}

static void NAME(iq4_nl_tiny)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nb, float *res) {
  for (int r = 0; r < NR; r++) {
    float acc[8] = { 0 };
    int32_t lane[8];
    for (int64_t b = 0; b < nb; b++) {
      iq4_lanes(w + IQ4_NL_BYTES * b + 2, xr[r].q + 32 * b, lane);
      const float d = iq4_h2f(w + IQ4_NL_BYTES * b) * xr[r].dx[b];
      for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    res[r] = iq4_hsum8(acc);
  }
}

static void NAME(iq4_nl_chain)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nb, float *res) {
  for (int r = 0; r < NR; r++) {
    float acc = 0.0f;
    int32_t lane[8];
    for (int64_t b = 0; b < nb; b++) {
      iq4_lanes(w + IQ4_NL_BYTES * b + 2, xr[r].q + 32 * b, lane);
      int32_t isum = 0;
      for (int l = 0; l < 8; l++) isum += lane[l];
      acc = fmaf((float)isum, iq4_h2f(w + IQ4_NL_BYTES * b) * xr[r].dx[b], acc);
    }
    res[r] = acc;
  }
}

static void NAME(iq4_xs_tiled)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nsb, float *res) {
  for (int r = 0; r < NR; r++) {
    float out = 0.0f;
    int32_t lane[8];
    for (int64_t b = 0; b < nsb; b++) {
      const uint8_t *blk = w + IQ4_XS_BYTES * b;
      int32_t S = 0;
      for (int ib = 0; ib < 8; ib++) {
        iq4_lanes(blk + 8 + 16 * ib, xr[r].q + 256 * b + 32 * ib, lane);
        int32_t sub = 0;
        for (int l = 0; l < 8; l++) sub += lane[l];
        S += iq4_xs_scale(blk, ib) * sub;
      }
      out = fmaf((float)S * iq4_h2f(blk), xr[r].dx[8 * b], out);
    }
    res[r] = out;
  }
}

// Eight weight rows (row i at w + i·rb) times nt activation rows: each as the one-row chain.
static void NAME(iq4_nl_chain8)(const uint8_t *w, size_t rb, const xrow_t *xr, int nt, int64_t nb, float *out, int64_t ostride) {
  for (int t = 0; t < nt; t++)
    for (int i = 0; i < 8; i++) NAME(iq4_nl_chain)(w + i * rb, &xr[t], 1, nb, out + t * ostride + i);
}
static void NAME(iq4_xs_tiled8)(const uint8_t *w, size_t rb, const xrow_t *xr, int nt, int64_t nsb, float *out, int64_t ostride) {
  for (int t = 0; t < nt; t++)
    for (int i = 0; i < 8; i++) NAME(iq4_xs_tiled)(w + i * rb, &xr[t], 1, nsb, out + t * ostride + i);
}
#endif

// ---------------------------------------------------------------- AVX2

#if IMPL_AVX2 && !IMPL_VNNI
/** One 32-value block's codes → its 32 int8 weights in value order (table: K in a register). */
static inline __m256i iq4_values(const uint8_t *qs, __m128i table) {
  const __m128i b = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m4)), _mm_shuffle_epi8(table, _mm_and_si128(b, m4)));
}
/** Pair sums of w·x (int16; |w|, |x| ≤ 127 so no saturation), as llama.cpp's mul_add_epi8. */
static inline __m256i iq4_pairs(__m256i w, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}
#define IQ4_XQ(xr, u) _mm256_loadu_si256((const __m256i *)((xr)->q + 32 * (u)))

static void NAME(iq4_nl_tiny)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nb, float *res) {
  const __m128i table = _mm_loadu_si128((const __m128i *)iq4_kvalues);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t *blk = w + IQ4_NL_BYTES * b;
    const __m256i q = iq4_values(blk + 2, table), qa = _mm256_sign_epi8(q, q);
    const float d = _cvtsh_ss(iq4_u16(blk));
#define ROW(acc, r) acc = _mm256_fmadd_ps(_mm256_set1_ps(d * xr[r].dx[b]), \
      _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(qa, _mm256_sign_epi8(IQ4_XQ(&xr[r], b), q)), ones)), acc)
    ROW(a0, 0);
    if (NR > 1) ROW(a1, 1);
    if (NR > 2) ROW(a2, 2);
    if (NR > 3) ROW(a3, 3);
#undef ROW
  }
  res[0] = hsum_f32_avx2(a0);
  if (NR > 1) res[1] = hsum_f32_avx2(a1);
  if (NR > 2) res[2] = hsum_f32_avx2(a2);
  if (NR > 3) res[3] = hsum_f32_avx2(a3);
}

#undef IQ4_XQ
#endif

#if IMPL_AVX2 // the AVX2 and VNNI copies: these are latency-bound scalar chains per output
#if !IMPL_VNNI // defined once, the VNNI copy calls it
/** Σ K[q]·x over one 32-value block, for NR activation rows (weights decoded once). */
static inline void iq4_block_sums(const uint8_t *qs, const xrow_t *xr, int NR, int64_t u, int32_t *isum) {
  const __m256i q = iq4_values(qs, _mm_loadu_si128((const __m128i *)iq4_kvalues)), qa = _mm256_sign_epi8(q, q);
  for (int r = 0; r < NR; r++) {
    const __m256i x = _mm256_loadu_si256((const __m256i *)(xr[r].q + 32 * u));
    isum[r] = hsum_i32_avx2(_mm256_madd_epi16(_mm256_maddubs_epi16(qa, _mm256_sign_epi8(x, q)), _mm256_set1_epi16(1)));
  }
}
#endif

static void NAME(iq4_nl_chain)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nb, float *res) {
  float acc[4] = { 0, 0, 0, 0 };
  int32_t isum[4];
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t *blk = w + IQ4_NL_BYTES * b;
    iq4_block_sums(blk + 2, xr, NR, b, isum);
    const float d = _cvtsh_ss(iq4_u16(blk));
    for (int r = 0; r < NR; r++) acc[r] = fmaf((float)isum[r], d * xr[r].dx[b], acc[r]);
  }
  for (int r = 0; r < NR; r++) res[r] = acc[r];
}

static void NAME(iq4_xs_tiled)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nsb, float *res) {
  float out[4] = { 0, 0, 0, 0 };
  int32_t isum[4];
  for (int64_t b = 0; b < nsb; b++) {
    const uint8_t *blk = w + IQ4_XS_BYTES * b;
    int32_t S[4] = { 0, 0, 0, 0 };
    for (int ib = 0; ib < 8; ib++) {
      iq4_block_sums(blk + 8 + 16 * ib, xr, NR, 8 * b + ib, isum);
      const int ls = iq4_xs_scale(blk, ib);
      for (int r = 0; r < NR; r++) S[r] += ls * isum[r];
    }
    const float d = _cvtsh_ss(iq4_u16(blk));
    for (int r = 0; r < NR; r++) out[r] = fmaf((float)S[r] * d, xr[r].dx[8 * b], out[r]);
  }
  for (int r = 0; r < NR; r++) res[r] = out[r];
}

// Eight weight rows at once, one per float lane, as llama.cpp's repacked gemv does: lane i is
// exactly row i's scalar chain (fma per lane), so these give the one-row kernels' bits.
#if !IMPL_VNNI
/** [Σ p0, Σ p1, …, Σ p7]: the eight vectors' lane sums, in one vector (exact integers). */
static inline __m256i iq4_sum8(const __m256i *p) {
  const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]), h23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]), h67 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}
/** The f16 words at byte offset o of eight rows (stride rb), as floats. */
static inline __m256 iq4_d8(const uint8_t *w, size_t rb) {
  uint16_t h[8];
  for (int i = 0; i < 8; i++) h[i] = iq4_u16(w + i * rb);
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}
#endif

// nt activation rows (xr[0..nt), nt ≤ IQ4_NT) against eight weight rows: out[t·ostride + i].
// Blocks outer, activation rows inner: each weight block is decoded once for all nt rows, and
// each output still takes its chain's steps in block order.
static void NAME(iq4_nl_chain8)(const uint8_t *w, size_t rb, const xrow_t *xr, int nt, int64_t nb, float *out, int64_t ostride) {
  const __m128i table = _mm_loadu_si128((const __m128i *)iq4_kvalues);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[IQ4_NT];
  for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t *blk = w + IQ4_NL_BYTES * b;
    __m256i q[8], qa[8];
    for (int i = 0; i < 8; i++) { q[i] = iq4_values(blk + i * rb + 2, table); qa[i] = _mm256_sign_epi8(q[i], q[i]); }
    const __m256 d8 = iq4_d8(blk, rb);
    for (int t = 0; t < nt; t++) {
      const __m256i xv = _mm256_loadu_si256((const __m256i *)(xr[t].q + 32 * b));
      __m256i p[8];
      for (int i = 0; i < 8; i++) p[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(qa[i], _mm256_sign_epi8(xv, q[i])), ones);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iq4_sum8(p)), _mm256_mul_ps(d8, _mm256_set1_ps(xr[t].dx[b])), acc[t]);
    }
  }
  for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + t * ostride, acc[t]);
}

static void NAME(iq4_xs_tiled8)(const uint8_t *w, size_t rb, const xrow_t *xr, int nt, int64_t nsb, float *out, int64_t ostride) {
  const __m128i table = _mm_loadu_si128((const __m128i *)iq4_kvalues);
  __m256 acc[IQ4_NT];
  for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nsb; b++) {
    const uint8_t *blk = w + IQ4_XS_BYTES * b;
    __m256i q[8][8], qa[8][8], ls[8][8]; // [sub-block][row]
    for (int i = 0; i < 8; i++)
      for (int ib = 0; ib < 8; ib++) {
        q[ib][i] = iq4_values(blk + i * rb + 8 + 16 * ib, table);
        qa[ib][i] = _mm256_sign_epi8(q[ib][i], q[ib][i]);
        ls[ib][i] = _mm256_set1_epi16((short)iq4_xs_scale(blk + i * rb, ib));
      }
    const __m256 d8 = iq4_d8(blk, rb);
    for (int t = 0; t < nt; t++) {
      __m256i s[8];
      for (int i = 0; i < 8; i++) s[i] = _mm256_setzero_si256();
      for (int ib = 0; ib < 8; ib++) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(xr[t].q + 256 * b + 32 * ib));
        for (int i = 0; i < 8; i++)
          s[i] = _mm256_add_epi32(s[i], _mm256_madd_epi16(_mm256_maddubs_epi16(qa[ib][i], _mm256_sign_epi8(xv, q[ib][i])), ls[ib][i]));
      }
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(iq4_sum8(s)), d8), _mm256_set1_ps(xr[t].dx[8 * b]), acc[t]);
    }
  }
  for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + t * ostride, acc[t]);
}
#endif

// ---------------------------------------------------------------- AVX-512 VNNI

#if IMPL_VNNI
// Same float operations as the AVX2 kernels, per output and in order; vpdpbusd gives the same
// int32 lanes as maddubs + madd (4 consecutive products each, |K|·|x| ≤ 127·127, no saturation).
// Signed × signed as AVX2 does it: |w| times x with w's sign.
static inline __m512i iq4_dot4(__m512i w, __m512i x) {
  const __m512i xs = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), xs);
}
/** Codes of two 32-value blocks (16 bytes each) → 64 int8 weights: [a 0..31 | b 0..31]. */
static inline __m512i iq4_values2(const uint8_t *a, const uint8_t *b, __m512i table) {
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)a));
  const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b));
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srlv_epi16(v, counts), _mm512_set1_epi8(0x0f)));
}
static inline __m512i iq4_table512(void) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)iq4_kvalues));
}
/** Two activation rows' 32 codes of unit u, one per 256-bit half. */
static inline __m512i iq4_x2(const xrow_t *a, const xrow_t *b, int64_t u) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(a->q + 32 * u))),
                            _mm256_loadu_si256((const __m256i *)(b->q + 32 * u)), 1);
}
static inline __m512 iq4_scale2(float a, float b) {
  return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

// Prompt: the weight block in both halves, two activation rows per register.
static void NAME(iq4_nl_tiny)(const uint8_t *w, const xrow_t *xr, int NR, int64_t nb, float *res) {
  const __m512i table = iq4_table512();
  __m512 a01 = _mm512_setzero_ps(), a23 = a01;
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t *blk = w + IQ4_NL_BYTES * b;
    const __m512i q = iq4_values2(blk + 2, blk + 2, table);
    const float d = _cvtsh_ss(iq4_u16(blk));
    a01 = _mm512_fmadd_ps(iq4_scale2(d * xr[0].dx[b], d * xr[NR > 1].dx[b]), _mm512_cvtepi32_ps(iq4_dot4(q, iq4_x2(&xr[0], &xr[NR > 1], b))), a01);
    if (NR > 2)
      a23 = _mm512_fmadd_ps(iq4_scale2(d * xr[2].dx[b], d * xr[NR - 1].dx[b]), _mm512_cvtepi32_ps(iq4_dot4(q, iq4_x2(&xr[2], &xr[NR - 1], b))), a23);
  }
  const float r[4] = { hsum_f32_avx2(_mm512_castps512_ps256(a01)), hsum_f32_avx2(_mm512_extractf32x8_ps(a01, 1)),
                       hsum_f32_avx2(_mm512_castps512_ps256(a23)), hsum_f32_avx2(_mm512_extractf32x8_ps(a23, 1)) };
  for (int i = 0; i < NR; i++) res[i] = r[i];
}

#endif

// ---------------------------------------------------------------- the matmul task

/** One chunk: IQ4_ROWS weight rows times every activation row (each output by one call, with
 *  the same operations whatever the thread count: bit-identical for any number of threads). */
static void NAME(iq4_chunk)(void *p, int64_t blk, int ith) {
  (void)ith;
  const mm_t *m = p;
  const int xs = m->type == T_IQ4_XS;
  const int64_t rows = m->rows, T = m->T, n = xs ? m->cols / 256 : m->cols / 32;
  const int64_t r0 = blk * IQ4_ROWS, r1 = r0 + IQ4_ROWS < rows ? r0 + IQ4_ROWS : rows;
  // One summation order per weight, whatever T (batch invariance: a row's output must not depend
  // on the rows beside it): IQ4_XS always takes llama.cpp's batched (tiled) order, IQ4_NL the
  // repacked chain when its rows allow, else tinyBLAS's order (see the top of this file).
  const int chain = xs ? 1 : rows % 8 == 0;
  if (chain) { // eight weight rows per call, up to IQ4_NT activation rows
    xrow_t xr[IQ4_NT];
    for (int64_t t0 = 0; t0 < T; t0 += IQ4_NT) {
      const int nt = T - t0 < IQ4_NT ? (int)(T - t0) : IQ4_NT;
      for (int t = 0; t < nt; t++) xr[t] = xrow_at(m, t0 + t);
      float *out = m->out + t0 * rows;
      int64_t r = r0;
      for (; r + 8 <= r1; r += 8) {
        if (xs) NAME(iq4_xs_tiled8)(m->w + r * m->rb, m->rb, xr, nt, n, out + r, rows);
        else NAME(iq4_nl_chain8)(m->w + r * m->rb, m->rb, xr, nt, n, out + r, rows);
      }
      for (; r < r1; r++)
        for (int t = 0; t < nt; t++) {
          if (xs) NAME(iq4_xs_tiled)(m->w + r * m->rb, &xr[t], 1, n, out + t * rows + r);
          else NAME(iq4_nl_chain)(m->w + r * m->rb, &xr[t], 1, n, out + t * rows + r);
        }
    }
    return;
  }
  for (int64_t t = 0; t < T; t += 4) {
    const int NR = T - t < 4 ? (int)(T - t) : 4;
    xrow_t xr[4];
    for (int i = 0; i < NR; i++) xr[i] = xrow_at(m, t + i);
    float res[4];
    for (int64_t r = r0; r < r1; r++) {
      NAME(iq4_nl_tiny)(m->w + r * m->rb, xr, NR, n, res); // IQ4_NL whose rows are not a multiple of 8
      for (int i = 0; i < NR; i++) m->out[(t + i) * rows + r] = res[i];
    }
  }
}
