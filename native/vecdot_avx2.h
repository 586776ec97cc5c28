// Fused dot products for matrix–vector work (decode: T = 1..3 activation rows), AVX2.
// Each reads a weight row's blocks straight from the file's bytes and multiplies them with the
// activation row quantized as llama.cpp quantizes it (see quantize_x): no decoded copy of the
// row, so a core keeps up with memory. Included by matmul.c inside its AVX2 target region;
// the generic path (matmul_impl.h) covers every other case.
//
// Block layouts (ggml-common.h): q4_0 {d; qs[16]}, q4_1 {d, m; qs[16]}, q5_0 {d; qh[4]; qs[16]},
// q5_1 {d, m; qh[4]; qs[16]}, q8_0 {d; qs[32]}, q4_K {d, dmin; scales[12]; qs[128]},
// q5_K {d, dmin; scales[12]; qh[32]; qs[128]},
// q6_K {ql[128]; qh[64]; scales[16]; d}. Halves are little-endian IEEE binary16.

static inline float h2f(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

/** 16 bytes → 32 values: the low nibbles (values 0..15), then the high nibbles (16..31). */
static inline __m256i vd_nibbles(const uint8_t *qs) {
  const __m128i b = _mm_loadu_si128((const __m128i *)qs);
  const __m256i both = _mm256_insertf128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/** bit j of a 32-bit field → byte j = 0xFF when set, else 0. */
static inline __m256i vd_bits(const uint8_t *qh) {
  uint32_t x;
  memcpy(&x, qh, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), shuf);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

/** Σ u·s over 32 unsigned × signed bytes, as 8 float partial sums. */
static inline __m256 vd_us(__m256i u, __m256i s) {
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/** Σ a·b over 32 signed × signed bytes, as 8 float partial sums. */
static inline __m256 vd_ss(__m256i a, __m256i b) {
  return vd_us(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

// Every kernel takes NR activation rows (1 or 4, a compile-time constant once inlined): the weight
// block is decoded once and each activation row keeps its own accumulators, summed in exactly the
// order of the one-row kernel. So an output's bits do not depend on how many rows are multiplied
// at once (batch invariance: a request's answer does not depend on the rest of the batch).
#define VD_KERNEL static inline __attribute__((always_inline))
#define XQ(r, u) _mm256_loadu_si256((const __m256i *)(x[r].q + 32 * (u)))

// Q4_0 follows the order of llama.cpp's repacked Q4_0 kernels (ggml-cpu/arch/x86/repack.cpp, its
// gemv and gemm on AVX2 and AVX-512, which take Q4_0 weights of 8·n rows): each block's dot Σ q·x
// summed exactly in integers, converted once and scaled once, one chain per output, block after
// block:  acc = fma(float(Σ q·x), d·dx, acc): the same float operations as the newest llama.cpp on
// x86 (given the same activations), and every kernel of this type (vnni_q4_0_split_n,
// vt_q4_0_n) takes one conversion and one FMA a block where the vec_dot order took eight of
// each. Here eight blocks' integer dots are summed at once (lane c: block u0 + c), then chained.
// The other types keep llama.cpp's vec_dot order (eight float lanes per output), as llama.cpp of
// 2026-10-01 runs them on x86.

/** acc = fma(f_c, s_c, acc) for c = 0, 1, 2, 3 (lane 0 of acc; the other lanes are don't-cares). */
static inline __m128 vd_chain4(__m128 f, __m128 s, __m128 acc) {
  acc = _mm_fmadd_ss(f, s, acc);
  acc = _mm_fmadd_ss(_mm_movehdup_ps(f), _mm_movehdup_ps(s), acc);
  acc = _mm_fmadd_ss(_mm_movehl_ps(f, f), _mm_movehl_ps(s, s), acc);
  return _mm_fmadd_ss(_mm_shuffle_ps(f, f, 3), _mm_shuffle_ps(s, s, 3), acc);
}

/** Four rows' acc[r] = fma(f[r]_c, s[r]_c, acc[r]) for c = 0..7, the rows side by side in the
 *  four lanes of acc4 (a 4 × 8 transposition of f and s first). */
static inline __m128 vd_chain8x4(const __m256 *f, const __m256 *s, __m128 acc4) {
  __m256 g[2][4];
  const __m256 *v[2] = { f, s };
  for (int k = 0; k < 2; k++) {
    const __m256 t0 = _mm256_unpacklo_ps(v[k][0], v[k][1]), t1 = _mm256_unpackhi_ps(v[k][0], v[k][1]);
    const __m256 t2 = _mm256_unpacklo_ps(v[k][2], v[k][3]), t3 = _mm256_unpackhi_ps(v[k][2], v[k][3]);
    g[k][0] = _mm256_shuffle_ps(t0, t2, 0x44); // blocks 0 | 4 of the four rows
    g[k][1] = _mm256_shuffle_ps(t0, t2, 0xEE); // 1 | 5
    g[k][2] = _mm256_shuffle_ps(t1, t3, 0x44); // 2 | 6
    g[k][3] = _mm256_shuffle_ps(t1, t3, 0xEE); // 3 | 7
  }
  for (int c = 0; c < 4; c++) acc4 = _mm_fmadd_ps(_mm256_castps256_ps128(g[0][c]), _mm256_castps256_ps128(g[1][c]), acc4);
  for (int c = 0; c < 4; c++) acc4 = _mm_fmadd_ps(_mm256_extractf128_ps(g[0][c], 1), _mm256_extractf128_ps(g[1][c], 1), acc4);
  return acc4;
}

/** Blocks u0..u0+7 of Q4_0 (those past nu are zeros: n of them are real), times NR activation
 *  rows: f[r] lane c = float(Σ q·x) of block u0 + c, s[r] lane c = its d·dx. */
VD_KERNEL void vd_q4_0_group(const uint8_t *w, const xrow_t *x, int NR, int64_t u0, int n, __m256 *f, __m256 *s) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i q[8], qa[8];
  float d[8] __attribute__((aligned(32)));
  for (int c = 0; c < 8; c++) {
    if (c < n) {
      const uint8_t *b = w + (u0 + c) * 18;
      if (NR == 1) stream_prefetch(b, 18); // decode (prefetch.h)
      q[c] = _mm256_sub_epi8(vd_nibbles(b + 2), _mm256_set1_epi8(8));
      d[c] = h2f(b);
    } else {
      q[c] = _mm256_setzero_si256();
      d[c] = 0.0f;
    }
    qa[c] = _mm256_sign_epi8(q[c], q[c]);
  }
  const __m256 dv = _mm256_load_ps(d);
  for (int r = 0; r < NR; r++) {
    __m256i dot[8]; // Σ q·x with the sign trick: |q| × ±x, pairs, then pairs of pairs
    for (int c = 0; c < 8; c++)
      dot[c] = c < n ? _mm256_madd_epi16(_mm256_maddubs_epi16(qa[c], _mm256_sign_epi8(XQ(r, u0 + c), q[c])), ones) : _mm256_setzero_si256();
    const __m256 dx = n == 8 ? _mm256_loadu_ps(x[r].dx + u0)
                             : _mm256_maskload_ps(x[r].dx + u0, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    s[r] = _mm256_mul_ps(dv, dx); // d·dx
    f[r] = _mm256_cvtepi32_ps(hsum8_i32_avx2(dot));
  }
}

VD_KERNEL void vd_q4_0_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out) {
  __m128 acc = _mm_setzero_ps(); // NR = 1: lane 0; NR = 4: lane r for row r
  __m256 f[4], s[4];
  for (int64_t u0 = 0; u0 < nu; u0 += 8) {
    const int n = nu - u0 < 8 ? (int)(nu - u0) : 8;
    if (n == 8) vd_q4_0_group(w, x, NR, u0, 8, f, s);
    else vd_q4_0_group(w, x, NR, u0, n, f, s); // the zeros past nu leave acc as it is: fma(0, 0, acc) = acc
    if (NR == 1) acc = vd_chain4(_mm256_extractf128_ps(f[0], 1), _mm256_extractf128_ps(s[0], 1), vd_chain4(_mm256_castps256_ps128(f[0]), _mm256_castps256_ps128(s[0]), acc));
    else acc = vd_chain8x4(f, s, acc);
  }
  if (NR == 1) out[0] = _mm_cvtss_f32(acc);
  else _mm_storeu_ps(out, acc);
}

VD_KERNEL void vd_q4_1_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out) {
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  float offsets[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
  for (int64_t u = 0; u < nu; u++, w += 20) {
    if (NR == 1) stream_prefetch(w, 20); // decode (prefetch.h)
    const __m256i q = vd_nibbles(w + 4);
    const float d = h2f(w), m = h2f(w + 2);
    for (int r = 0; r < NR; r++) {
      offsets[r] += m * x[r].fs[2 * u]; // m · s, s = half(d · Σ codes) of block_q8_1
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * x[r].dx[u]), vd_us(q, XQ(r, u)), acc[r]);
    }
  }
  for (int r = 0; r < NR; r++) out[r] = hsum_f32_avx2(acc[r]) + offsets[r];
}

VD_KERNEL void vd_q5_0_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out) {
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (int64_t u = 0; u < nu; u++, w += 22) {
    if (NR == 1) stream_prefetch(w, 22); // decode (prefetch.h)
    // q − 16 as signed bytes: set bits 4..7 where the fifth bit is 0.
    const __m256i hi = _mm256_andnot_si256(vd_bits(w + 2), _mm256_set1_epi8((char)0xf0));
    const __m256i q = _mm256_or_si256(vd_nibbles(w + 6), hi);
    const float d = h2f(w);
    for (int r = 0; r < NR; r++) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * x[r].dx[u]), vd_ss(q, XQ(r, u)), acc[r]);
  }
  for (int r = 0; r < NR; r++) out[r] = hsum_f32_avx2(acc[r]);
}

VD_KERNEL void vd_q5_1_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out) {
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  float offsets[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
  for (int64_t u = 0; u < nu; u++, w += 24) {
    if (NR == 1) stream_prefetch(w, 24); // decode (prefetch.h)
    const __m256i hi = _mm256_and_si256(vd_bits(w + 4), _mm256_set1_epi8(0x10));
    const __m256i q = _mm256_or_si256(vd_nibbles(w + 8), hi);
    const float d = h2f(w), m = h2f(w + 2);
    for (int r = 0; r < NR; r++) {
      offsets[r] += m * x[r].fs[2 * u];
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * x[r].dx[u]), vd_us(q, XQ(r, u)), acc[r]);
    }
  }
  for (int r = 0; r < NR; r++) out[r] = hsum_f32_avx2(acc[r]) + offsets[r];
}

VD_KERNEL void vd_q8_0_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out) {
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (int64_t u = 0; u < nu; u++, w += 34) {
    if (NR == 1) stream_prefetch_wide(w, 34); // decode (prefetch.h)
    const __m256i q = _mm256_loadu_si256((const __m256i *)(w + 2));
    const __m256i qa = _mm256_sign_epi8(q, q);
    const float d = h2f(w);
    for (int r = 0; r < NR; r++)
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * x[r].dx[u]), vd_us(qa, _mm256_sign_epi8(XQ(r, u), q)), acc[r]);
  }
  for (int r = 0; r < NR; r++) out[r] = hsum_f32_avx2(acc[r]);
}

/** Q4_0 on k_repack's split layout (matmul.c: eight rows' scales, then their 16 bytes of nibbles
 *  each), eight rows w .. w + 7·rb times NR activation rows, in vd_q4_0_n's order: this is how
 *  llama.cpp runs Q4_0 on AVX2 too (its q4_0_8x8 repack), and the one chain per output becomes
 *  one vector FMA a block for eight rows. Per block step: row pair p's 32 bytes of nibbles are
 *  its values 0–15 (low nibbles) and 16–31 (high), codes q + 8; maddubs with x's values (never
 *  saturating: 2·15·127), the two halves added as int16 (≤ 7620) and madd'ed to 32 bits give
 *  four partial sums per row (row 2p in the low 128 bits, 2p + 1 in the high); three hadds sum
 *  them to one lane per row, in the order 0, 2, 4, 6 | 1, 3, 5, 7, less 8·Σx (x->sx). The
 *  scales are permuted to that order once a step, and the rows back at the end. */
VD_KERNEL void vd_q4_0_8_n(const uint8_t *w, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    if (NR == 1) stream_prefetch_wide(b, us); // decode (prefetch.h)
    const __m256 d = _mm256_permutevar8x32_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b)), order);
    __m256i lo[4], hi[4];
    for (int p = 0; p < 4; p++) {
      const __m256i v = _mm256_loadu_si256((const __m256i *)(b + 16 + 32 * p));
      lo[p] = _mm256_and_si256(v, m4);
      hi[p] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    for (int r = 0; r < NR; r++) {
      const __m256i xlo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u)));
      const __m256i xhi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u + 16)));
      __m256i t[4];
      for (int p = 0; p < 4; p++)
        t[p] = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo[p], xlo), _mm256_maddubs_epi16(hi[p], xhi)), ones);
      const __m256i sums = _mm256_hadd_epi32(_mm256_hadd_epi32(t[0], t[1]), _mm256_hadd_epi32(t[2], t[3])); // rows 0, 2, 4, 6 | 1, 3, 5, 7
      const __m256i dot = _mm256_sub_epi32(sums, _mm256_set1_epi32(8 * x[r].sx[u]));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(d, _mm256_set1_ps(x[r].dx[u])), acc[r]);
    }
  }
  const __m256i rows = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int r = 0; r < NR; r++) _mm256_storeu_ps(out + r * ostride, _mm256_permutevar8x32_ps(acc[r], rows));
}
static void vd_q4_0_8_x1(const uint8_t *w, size_t us, const xrow_t *x, int64_t nu, float *out, int64_t os) { vd_q4_0_8_n(w, us, x, 1, nu, out, os); }
static void vd_q4_0_8_x4(const uint8_t *w, size_t us, const xrow_t *x, int64_t nu, float *out, int64_t os) { vd_q4_0_8_n(w, us, x, 4, nu, out, os); }

/** The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block (ggml's get_scale_min_k4). */
static inline void vd_scale_min(int j, const uint8_t *s, int *sc, int *m) {
  if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
  else { *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4); *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4); }
}

/** Q4_K and Q5_K (five: the fifth bits from qh). */
VD_KERNEL void vd_q45_K_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out, int five) {
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  float mins[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
  const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
  const size_t bsz = five ? 176 : 144;
  for (int64_t b = 0; b < nu / 8; b++, w += bsz) {
    if (NR == 1) stream_prefetch(w, bsz); // decode (prefetch.h)
    const float wd = h2f(w), dmin = h2f(w + 2);
    const uint8_t *scales = w + 4, *qs = w + (five ? 48 : 16);
    const __m256i hbits = five ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
    __m256i sumi[4] = { _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256() };
    float msum[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    for (int j = 0; j < 4; j++) {
      int sc0, m0, sc1, m1;
      vd_scale_min(2 * j, scales, &sc0, &m0);
      vd_scale_min(2 * j + 1, scales, &sc1, &m1);
      const int64_t u = 8 * b + 2 * j;
      const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
      __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
      if (five) { // the fifth bit of sub-block s is bit s of qh[l]: 16 where it is set
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one), 4));
      }
      const __m256i s0 = _mm256_set1_epi16((short)sc0), s1 = _mm256_set1_epi16((short)sc1);
      for (int r = 0; r < NR; r++) {
        msum[r] += (float)m0 * (x[r].fs[2 * u] + x[r].fs[2 * u + 1]) + (float)m1 * (x[r].fs[2 * u + 2] + x[r].fs[2 * u + 3]);
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, XQ(r, u)), s0);
        const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, XQ(r, u + 1)), s1);
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(p0, p1));
      }
    }
    for (int r = 0; r < NR; r++) {
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(wd * x[r].dx[8 * b]), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
      mins[r] += dmin * msum[r]; // fs already carries the activation scale
    }
  }
  for (int r = 0; r < NR; r++) out[r] = hsum_f32_avx2(acc[r]) - mins[r];
}

VD_KERNEL void vd_q6_K_n(const uint8_t *w, const xrow_t *x, int NR, int64_t nu, float *out) {
  __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
  for (int64_t b = 0; b < nu / 8; b++, w += 210) {
    if (NR == 1) stream_prefetch(w, 210); // decode (prefetch.h)
    const uint8_t *ql = w, *qh = w + 128;
    const int8_t *sc = (const int8_t *)(w + 192);
    const float wd = h2f(w + 208);
    __m256i sumi[4] = { _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256() };
    for (int half = 0; half < 2; half++) {
      const __m256i bits1 = _mm256_loadu_si256((const __m256i *)(ql + 64 * half));
      const __m256i bits2 = _mm256_loadu_si256((const __m256i *)(ql + 64 * half + 32));
      const __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * half));
      const __m256i q[4] = {
        _mm256_or_si256(_mm256_and_si256(bits1, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4)),
        _mm256_or_si256(_mm256_and_si256(bits2, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits1, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits2, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4)),
      };
      for (int k = 0; k < 4; k++) {
        const int64_t u = 8 * b + 4 * half + k;
        const int8_t *s = sc + 8 * half + 2 * k;
        const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(s[1]), _mm_set1_epi16(s[0]));
        for (int r = 0; r < NR; r++) {
          const __m256i y = XQ(r, u);
          // Σ (q − 32)·y per pair of values, then each 16 values times its scale.
          const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], y), _mm256_maddubs_epi16(k32, y));
          sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(p, scales));
        }
      }
    }
    for (int r = 0; r < NR; r++) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(wd * x[r].dx[8 * b]), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
  }
  for (int r = 0; r < NR; r++) out[r] = hsum_f32_avx2(acc[r]);
}

#undef XQ

// One weight row times NR = 1 or 4 activation rows (out[r] = row · x[r]).
typedef void (*vd_fn)(const uint8_t *, const xrow_t *, int64_t, float *);
#define VD_PAIR(name, call) \
  static void name##_x1(const uint8_t *w, const xrow_t *x, int64_t nu, float *out) { call(w, x, 1, nu, out); } \
  static void name##_x4(const uint8_t *w, const xrow_t *x, int64_t nu, float *out) { call(w, x, 4, nu, out); }
VD_PAIR(vd_q4_0, vd_q4_0_n)
VD_PAIR(vd_q4_1, vd_q4_1_n)
VD_PAIR(vd_q5_0, vd_q5_0_n)
VD_PAIR(vd_q5_1, vd_q5_1_n)
VD_PAIR(vd_q8_0, vd_q8_0_n)
#define vd_q4_K_n(w, x, NR, nu, out) vd_q45_K_n(w, x, NR, nu, out, 0)
#define vd_q5_K_n(w, x, NR, nu, out) vd_q45_K_n(w, x, NR, nu, out, 1)
VD_PAIR(vd_q4_K, vd_q4_K_n)
VD_PAIR(vd_q5_K, vd_q5_K_n)
VD_PAIR(vd_q6_K, vd_q6_K_n)
#undef VD_PAIR

typedef struct { vd_fn x1, x4; } vd_pair;

/** The fused kernels of a type ({NULL, NULL}: the type takes matmul_impl.h's path). */
static vd_pair vd_for(int type) {
  switch (type) {
    case T_Q4_0: return (vd_pair){ vd_q4_0_x1, vd_q4_0_x4 };
    case T_Q4_1: return (vd_pair){ vd_q4_1_x1, vd_q4_1_x4 };
    case T_Q5_0: return (vd_pair){ vd_q5_0_x1, vd_q5_0_x4 };
    case T_Q5_1: return (vd_pair){ vd_q5_1_x1, vd_q5_1_x4 };
    case T_Q8_0: return (vd_pair){ vd_q8_0_x1, vd_q8_0_x4 };
    case T_Q4_K: return (vd_pair){ vd_q4_K_x1, vd_q4_K_x4 };
    case T_Q5_K: return (vd_pair){ vd_q5_K_x1, vd_q5_K_x4 };
    case T_Q6_K: return (vd_pair){ vd_q6_K_x1, vd_q6_K_x4 };
    default: return (vd_pair){ NULL, NULL };
  }
}

/** out[t, r] for the rows of one chunk and every activation row t: four activation rows per
 *  call while four remain, then one. Either way each output is the one-row kernel's sum. A weight
 *  repacked on a CPU without AVX-512 VNNI (Q4_0 alone, k_repack) takes vd_q4_0_8_n for its whole
 *  groups of eight rows; the rows past them are as in the file. Same bits either way. */
static void vd_chunk(void *p, int64_t blk, int ith) {
  (void)ith;
  const mm_t *m = p;
  const vd_pair f = vd_for(m->type);
  const int64_t nu = m->cols / 32, rows = m->rows, r0 = blk * VD_ROWS, r1 = r0 + VD_ROWS < rows ? r0 + VD_ROWS : rows;
  const int64_t r8 = !m->packed ? r0 : rows / 8 * 8 < r1 ? rows / 8 * 8 : r1; // rows before r8 are in split groups
  int64_t t = 0;
  for (; t + 4 <= m->T; t += 4) {
    const xrow_t xr[4] = { xrow_at(m, t), xrow_at(m, t + 1), xrow_at(m, t + 2), xrow_at(m, t + 3) };
    float o[4];
    int64_t r = r0;
    for (; r < r8; r += 8) vd_q4_0_8_x4(m->w + r * m->rb, 8 * 18, xr, nu, m->out + t * rows + r, rows);
    for (; r < r1; r++) {
      f.x4(m->w + r * m->rb, xr, nu, o);
      for (int k = 0; k < 4; k++) m->out[(t + k) * rows + r] = o[k];
    }
  }
  for (; t < m->T; t++) {
    const xrow_t xr = xrow_at(m, t);
    int64_t r = r0;
    for (; r < r8; r += 8) vd_q4_0_8_x1(m->w + r * m->rb, 8 * 18, &xr, nu, m->out + t * rows + r, rows);
    for (; r < r1; r++) f.x1(m->w + r * m->rb, &xr, nu, m->out + t * rows + r);
  }
}
