// Fused decode dot products with AVX-512 VNNI (Q4_1 and Q8_0, SmolLM2's weights, and Q4_0), eight
// rows at a time. Included by matmul.c inside its AVX-512 target region, after vecdot_avx2.h;
// selected at run time (toy_has_vnni), the AVX2 kernels stay for every other CPU and type.
//
// Same bits as the AVX2 kernels (test/cpu-backend.test.ts checks it), because every float
// operation per row is the same one in the same order (Q4_0's own order: vnni_q4_0_split_n):
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
// On k_repack's split layout (matmul.c, split_fields: each field of a step's eight blocks side by
// side) the 4- and 5-bit types go further, four rows per register (vnni_quads_n,
// vnni_q4_0_split_n), and Q8_0 loads a pair of rows and the eight scales at once
// (vnni_q8_0_split_n); so do the K-quants, four rows per register with the eight rows' scales
// unpacked at once (vnni_q45_K_split_n, vnni_q6_K_split_n). The pair kernels stay for the file's
// layout (vnni_for picks by layout); Q4_0 has none (always repacked; vnni_chunk's AVX2 rows).

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
 *  of the group VNNI_AHEAD groups further on. Always inlined (see prefetch.h: GCC dropped these
 *  hints while this was a plain static function). Where the rows are repacked into one stream
 *  the kernels take prefetch.h's stream_prefetch instead. */
#ifndef VNNI_AHEAD
#define VNNI_AHEAD 2
#endif
static inline __attribute__((always_inline)) void vnni_prefetch(const uint8_t *w, size_t rb, int64_t nu, int64_t u) {
  const int64_t per = (int64_t)(8 * rb + 64 * nu - 1) / (64 * nu); // lines per block step
  const char *next = (const char *)w + VNNI_AHEAD * 8 * rb;
  for (int64_t k = u * per; k < (u + 1) * per; k++) _mm_prefetch(next + 64 * k, _MM_HINT_T0);
}

/** The prefetch of one block step of an eight-row kernel: on the file's layout (rows rb bytes
 *  apart, rb > us) vnni_prefetch's share of a later group; on the repacked layout, in decode (one
 *  activation row), the step's us bytes of the one stream STREAM_AHEAD further on (prefetch.h),
 *  as `how` says: VNNI_PF_STREAM (stream_prefetch: the pair kernels), VNNI_PF_WIDE
 *  (stream_prefetch_wide: the split kernels but Q6_K's, and the Q8_0 pair kernel) or VNNI_PF_SPLIT6
 *  (split Q6_K, stream_prefetch_split6). prefetch.h gives the measurements behind each choice.
 *  Prompts over repacked rows reuse each block from cache for many activation rows: no hint.
 *  steps, step: the kernel's block steps and this one (blocks, or K-quant super-blocks). */
enum { VNNI_PF_STREAM, VNNI_PF_WIDE, VNNI_PF_SPLIT6 };
static inline __attribute__((always_inline)) void vnni_step_prefetch(const uint8_t *w, const uint8_t *at, size_t rb, size_t us,
                                                                     int64_t steps, int64_t step, int NR, int how) {
  if (rb > us) vnni_prefetch(w, rb, steps, step);
  else if (NR != 1) return;
  else if (how == VNNI_PF_WIDE) stream_prefetch_wide(at, us);
  else if (how == VNNI_PF_SPLIT6) stream_prefetch_split6(at, us);
  else stream_prefetch(at, us);
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
static inline void vnni_finish(const __m512 *acc, float *out) {
  for (int p = 0; p < 4; p++) {
    out[2 * p] = hsum_f32_avx2(_mm512_castps512_ps256(acc[p]));
    out[2 * p + 1] = hsum_f32_avx2(_mm512_extractf32x8_ps(acc[p], 1));
  }
}

// The kernels below take NR activation rows (1 or 4, constant once inlined): the eight weight
// rows' blocks are decoded once per block step and each activation row keeps its own four
// accumulators, so every output is the one-row kernel's sum whatever NR (batch invariance).
// out[r * ostride + i] = weight row i · x[r].
#define VNNI_KERNEL static inline __attribute__((always_inline))
#define VNNI_ZERO4 { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() }
#define XQ512(r, u) _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[r].q + 32 * (u))))

// One block of the offset types (Q4_1, Q5_1) for up to four activation rows: the min term goes
// into offs (m · Σx of the block), the scaled integer dots into acc, in the one-row kernel's order.
static inline void vnni_offset_block(const __m512i *q, __m256 d, __m256 m, const xrow_t *x, int NR, int64_t u, __m512 (*acc)[4], __m256 *offs) {
  for (int r = 0; r < NR; r++) {
    offs[r] = _mm256_add_ps(offs[r], _mm256_mul_ps(m, _mm256_set1_ps(x[r].fs[2 * u])));
    const __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(x[r].dx[u]));
    const __m512i xq = XQ512(r, u);
    for (int p = 0; p < 4; p++)
      acc[r][p] = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q[p], xq)), acc[r][p]);
  }
}

// The eight outputs of each activation row, plus the offsets, as vd_q4_1 ends.
static inline void vnni_finish_offsets(__m512 (*acc)[4], const __m256 *offs, int NR, float *out, int64_t ostride) {
  for (int r = 0; r < NR; r++) {
    float e[8];
    _mm256_storeu_ps(e, offs[r]);
    vnni_finish(acc[r], out + r * ostride);
    for (int i = 0; i < 8; i++) out[r * ostride + i] += e[i];
  }
}

/** Rows w .. w + 7·rb of a 4- or 5-bit type (Q4_1, Q5_0, Q5_1; constant once inlined) on
 *  k_repack's split layout (matmul.c, split_fields; vnni_for), times x. Rows 0–3 and 4–7 of a step's quants
 *  are one 64-byte register each ("quads": row i in 128-bit lane i); its low nibbles are the rows'
 *  values 0–15 and its high nibbles values 16–31, so each quad gives two registers, multiplied by
 *  x's values 0–15 and 16–31 broadcast to every lane. Lane 4i + j of the low register is the
 *  integer lane j of row i's block (bytes 4j..4j+3), of the high one lane j + 4: the lanes of
 *  vnni_signed_n and vnni_offset_block, each scaled, converted and accumulated by the same
 *  operations in the same order, and summed at the end in hsum_f32_avx2's tree: the same bits.
 *  Per step and activation row: 4 integer dots, conversions and FMAs for eight rows, where the
 *  pair registers take 4 each plus an insert, a shift and a permute per pair. */
static const int32_t vnni_quad_idx[2][16] __attribute__((aligned(64))) = {
  { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 }, { 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7 } };

/** The eight rows' sums of quad accumulators (rows 0–3 lanes 0–3, lanes 4–7; rows 4–7 the same),
 *  in hsum_f32_avx2's tree per row: t_j = l_j + l_{j+4}, then (t0 + t2) + (t1 + t3). */
static inline __m256 vnni_quads_sums(const __m512 *acc) {
  const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512 t0 = _mm512_add_ps(acc[0], acc[1]), t1 = _mm512_add_ps(acc[2], acc[3]);
  const __m512 u0 = _mm512_add_ps(t0, _mm512_permute_ps(t0, 0x4E)), u1 = _mm512_add_ps(t1, _mm512_permute_ps(t1, 0x4E));
  const __m512 v0 = _mm512_add_ps(u0, _mm512_permute_ps(u0, 0xB1)), v1 = _mm512_add_ps(u1, _mm512_permute_ps(u1, 0xB1));
  return _mm512_castps512_ps256(_mm512_permutex2var_ps(v0, firsts, v1)); // rows 0..7
}

/** Rows 0–3 (q = 0) or 4–7 (q = 1) of eight per-row values s, each over its 128-bit lane. */
static inline __m512 vnni_quad_scale(__m256 s, int q) {
  return _mm512_permutexvar_ps(_mm512_load_si512(vnni_quad_idx[q]), _mm512_castps256_ps512(s));
}

VNNI_KERNEL void vnni_quads_n(int type, const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const int offset = type == T_Q4_1 || type == T_Q5_1, five = type == T_Q5_0 || type == T_Q5_1;
  const int qh_at = 16 + 16 * offset, qs_at = qh_at + 32 * five; // split fields: d, (m), (qh), qs
  const __m512i m4 = _mm512_set1_epi8(0x0f), k16 = _mm512_set1_epi8(16);
  __m512 acc[4][4]; // [r]: rows 0–3 low, high; rows 4–7 low, high
  __m256 offs[4];
  for (int r = 0; r < NR; r++) {
    for (int k = 0; k < 4; k++) acc[r][k] = _mm512_setzero_ps();
    offs[r] = _mm256_setzero_ps();
  }
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_WIDE);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
    const __m512i v0 = _mm512_loadu_si512(b + qs_at), v1 = _mm512_loadu_si512(b + qs_at + 64);
    __m512i q[4] = { _mm512_and_si512(v0, m4), _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4),
                     _mm512_and_si512(v1, m4), _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4) };
    if (five) { // bit j of row i's word is value j's fifth bit: the low 16 bits for q[0], q[2], the high for q[1], q[3]
      const __m256i qh = _mm256_loadu_si256((const __m256i *)(b + qh_at));
      const __m128i lo = _mm256_cvtepi32_epi16(qh), hi = _mm256_cvtepi32_epi16(_mm256_srli_epi32(qh, 16));
      const __mmask64 mk[4] = { _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(lo)), _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(hi)),
                                _cvtu64_mask64((uint64_t)_mm_extract_epi64(lo, 1)), _cvtu64_mask64((uint64_t)_mm_extract_epi64(hi, 1)) };
      for (int k = 0; k < 4; k++) q[k] = _mm512_mask_add_epi8(q[k], mk[k], q[k], k16);
    }
    const __m256 m = offset ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16))) : _mm256_setzero_ps();
    for (int r = 0; r < NR; r++) {
      const __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(x[r].dx[u])); // d·dx per row, as vnni_signed_n and vnni_offset_block
      const __m512 s0 = vnni_quad_scale(s, 0), s1 = vnni_quad_scale(s, 1);
      const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u)));
      const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u + 16)));
      __m512i zlo = _mm512_setzero_si512(), zhi = zlo;
      if (offset) offs[r] = _mm256_add_ps(offs[r], _mm256_mul_ps(m, _mm256_set1_ps(x[r].fs[2 * u])));
      else { // −k·Σx lanes (vnni_signed_n)
        zlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].nk + 8 * u)));
        zhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].nk + 8 * u + 4)));
      }
      acc[r][0] = _mm512_fmadd_ps(s0, _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zlo, q[0], xlo)), acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(s0, _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zhi, q[1], xhi)), acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(s1, _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zlo, q[2], xlo)), acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(s1, _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zhi, q[3], xhi)), acc[r][3]);
    }
  }
  for (int r = 0; r < NR; r++) {
    __m256 sums = vnni_quads_sums(acc[r]);
    if (offset) sums = _mm256_add_ps(sums, offs[r]);
    _mm256_storeu_ps(out + r * ostride, sums);
  }
}

/** Rows w .. w + 7·rb of Q4_0 on k_repack's split layout, times x, in vd_q4_0_n's order (llama.cpp's
 *  repacked Q4_0 kernels): per block the exact integer dot, then acc = fma(float(Σ q·x), d·dx, acc).
 *  The quads as in vnni_quads_n: vpdpbusd of the low nibbles (codes q + 8 of values 0–15) with
 *  x's values 0–15, then of the high nibbles with values 16–31, leaves row i's block in the four
 *  32-bit places of lane i (rows 0–3 in one register, 4–7 in the other); two unpacks and two
 *  adds gather rows i and i + 4 into places 0 and 1 of lane i (2 and 3 repeat them), less 8·Σx
 *  (x->sx), and one conversion and one FMA take the block for the eight rows. */
static const int32_t vnni_q4_0_scale_idx[16] __attribute__((aligned(64))) = { 0, 4, 0, 4, 1, 5, 1, 5, 2, 6, 2, 6, 3, 7, 3, 7 };
VNNI_KERNEL void vnni_q4_0_split_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const __m512i m4 = _mm512_set1_epi8(0x0f), sidx = _mm512_load_si512(vnni_q4_0_scale_idx);
  __m512 acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u; // split fields: the eight d, then the eight rows' 16 bytes of nibbles
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_WIDE);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
    const __m512i v0 = _mm512_loadu_si512(b + 16), v1 = _mm512_loadu_si512(b + 80);
    const __m512i q0 = _mm512_and_si512(v0, m4), q1 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
    const __m512i q2 = _mm512_and_si512(v1, m4), q3 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
    for (int r = 0; r < NR; r++) {
      const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u)));
      const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u + 16)));
      const __m512i lo = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q0, xlo), q1, xhi); // rows 0–3
      const __m512i hi = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q2, xlo), q3, xhi); // rows 4–7
      const __m512i pairs = _mm512_add_epi32(_mm512_unpacklo_epi32(lo, hi), _mm512_unpackhi_epi32(lo, hi)); // rows i, i + 4, i, i + 4
      const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(pairs, _mm512_shuffle_epi32(pairs, _MM_PERM_BADC)), _mm512_set1_epi32(8 * x[r].sx[u]));
      const __m512 s = _mm512_permutexvar_ps(sidx, _mm512_castps256_ps512(_mm256_mul_ps(d, _mm256_set1_ps(x[r].dx[u])))); // d·dx
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), s, acc[r]);
    }
  }
  const __m512i rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0); // rows 0–3, then 4–7
  for (int r = 0; r < NR; r++) _mm256_storeu_ps(out + r * ostride, _mm512_castps512_ps256(_mm512_permutexvar_ps(rows, acc[r])));
}

/** Rows w, w + rb, …, w + 7·rb (Q4_1) times x, as vd_q4_1 computes it. */
VNNI_KERNEL void vnni_q4_1_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  // Nibbles: 128-bit lanes hold row 2p's bytes, twice, then row 2p+1's; the odd lanes shift by 4.
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  __m256 offs[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_STREAM);
    const __m256i dm = vnni_heads(b, rb);
    const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(dm)), m = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(_mm256_srli_epi32(dm, 16)));
    __m512i q[4];
    for (int p = 0; p < 4; p++) q[p] = _mm512_and_si512(_mm512_srlv_epi16(vnni_two_x16(b + 4 + 2 * p * rb, b + 4 + (2 * p + 1) * rb), counts), m4);
    vnni_offset_block(q, d, m, x, NR, u, acc, offs);
  }
  vnni_finish_offsets(acc, offs, NR, out, ostride);
}

/** Signed weights (Q4_0, Q5_0, Q8_0) for eight rows, as unsigned codes qu = q + k per pair of rows:
 *  vpdpbusd(−k·Σx, qu, x) = Σ (q + k)·x − k·Σx = Σ q·x, exactly the int32 lanes of AVX2's sign
 *  trick (maddubs(|q|, ±x) + madd), with one instruction per pair and activation row. The −k·Σx
 *  lanes of each activation block (x[r].nk, vnni_signed_nk) are computed once per chunk, not once
 *  per eight weight rows. */
VNNI_KERNEL void vnni_signed_n(const __m512i *qu, const __m256 d, const xrow_t *x, int NR, int64_t u, __m512 acc[4][4]) {
  __m512 dp[4]; // the pair's d, each over its half
  for (int p = 0; p < 4; p++) dp[p] = vnni_pair_scale(d, p);
  for (int r = 0; r < NR; r++) {
    const __m512 dx = _mm512_set1_ps(x[r].dx[u]);
    const __m512i xq = XQ512(r, u);
    const __m512i negk = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[r].nk + 8 * u)));
    for (int p = 0; p < 4; p++) // d·dx lane by lane: the same product as before the permute
      acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dp[p], dx), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(negk, qu[p], xq)), acc[r][p]);
  }
}

/** vnni_q8_0_n on k_repack's split layout (matmul.c, split_fields): the eight scales, then rows
 *  2p and 2p + 1 side by side, one register. Each pair's d·dx lanes are a permute of the eight
 *  products d·dx: the same products as vnni_signed_n's permute-then-multiply, so the same bits.
 *  Its own loop rather than the loads below feeding vnni_signed_n: that ran 48–54 GB/s from
 *  cache against this loop's 52–56 (one thread, 576 × 1536 and 576 × 576, interleaved runs of the two builds, 5 rounds). */
VNNI_KERNEL void vnni_q8_0_split_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_WIDE);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
    __m512i qu[4]; // q + 128 (flipping the sign bit)
    for (int p = 0; p < 4; p++) qu[p] = _mm512_xor_si512(_mm512_loadu_si512(b + 16 + 64 * p), _mm512_set1_epi8((char)0x80));
    for (int r = 0; r < NR; r++) {
      const __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(x[r].dx[u]));
      const __m512i xq = XQ512(r, u);
      const __m512i negk = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[r].nk + 8 * u)));
      for (int p = 0; p < 4; p++)
        acc[r][p] = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(negk, qu[p], xq)), acc[r][p]);
    }
  }
  for (int r = 0; r < NR; r++) vnni_finish(acc[r], out + r * ostride);
}

/** Rows w, w + rb, …, w + 7·rb (Q8_0) times x, as vd_q8_0 computes it. */
VNNI_KERNEL void vnni_q8_0_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_WIDE);
    const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(vnni_heads(b, rb)));
    __m512i qu[4]; // q + 128 (flipping the sign bit)
    for (int p = 0; p < 4; p++)
      qu[p] = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b + 2 + 2 * p * rb))),
                                                  _mm256_loadu_si256((const __m256i *)(b + 2 + (2 * p + 1) * rb)), 1), _mm512_set1_epi8((char)0x80));
    vnni_signed_n(qu, d, x, NR, u, acc);
  }
  for (int r = 0; r < NR; r++) vnni_finish(acc[r], out + r * ostride);
}
/** The fifth bits of rows 2p and 2p+1 (the u32 at qh, qh + rb) as a byte mask over a pair
 *  register: bit j of each half is value j, as the nibbles are laid out (low, then high). */
static inline __mmask64 vnni_qh_pair(const uint8_t *qh, size_t rb) {
  uint32_t a, b;
  memcpy(&a, qh, 4);
  memcpy(&b, qh + rb, 4);
  return _cvtu64_mask64((uint64_t)a | (uint64_t)b << 32);
}

/** Rows w, w + rb, …, w + 7·rb (Q5_0) times x, as vd_q5_0 computes it. */
VNNI_KERNEL void vnni_q5_0_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0f), k16 = _mm512_set1_epi8(16);
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_STREAM);
    const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(vnni_heads(b, rb)));
    __m512i qu[4]; // the five-bit codes: q + 16
    for (int p = 0; p < 4; p++) {
      const __m512i nib = _mm512_and_si512(_mm512_srlv_epi16(vnni_two_x16(b + 6 + 2 * p * rb, b + 6 + (2 * p + 1) * rb), counts), m4);
      qu[p] = _mm512_mask_add_epi8(nib, vnni_qh_pair(b + 2 + 2 * p * rb, rb), nib, k16);
    }
    vnni_signed_n(qu, d, x, NR, u, acc);
  }
  for (int r = 0; r < NR; r++) vnni_finish(acc[r], out + r * ostride);
}

/** Rows w, w + rb, …, w + 7·rb (Q5_1) times x, as vd_q5_1 computes it. */
VNNI_KERNEL void vnni_q5_1_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0f), k16 = _mm512_set1_epi8(16);
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  __m256 offs[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (int64_t u = 0; u < nu; u++) {
    const uint8_t *b = w + us * u;
    vnni_step_prefetch(w, b, rb, us, nu, u, NR, VNNI_PF_STREAM);
    const __m256i dm = vnni_heads(b, rb);
    const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(dm)), m = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(_mm256_srli_epi32(dm, 16)));
    __m512i q[4];
    for (int p = 0; p < 4; p++) {
      const __m512i nib = _mm512_and_si512(_mm512_srlv_epi16(vnni_two_x16(b + 8 + 2 * p * rb, b + 8 + (2 * p + 1) * rb), counts), m4);
      q[p] = _mm512_mask_add_epi8(nib, vnni_qh_pair(b + 4 + 2 * p * rb, rb), nib, k16);
    }
    vnni_offset_block(q, d, m, x, NR, u, acc, offs);
  }
  vnni_finish_offsets(acc, offs, NR, out, ostride);
}
// K-quants: the sub-block sums go through maddubs (u8 × s8 pairs, as AVX2) and then vpdpwssd,
// which multiplies the int16 pairs by the 16-bit sub-scale and adds them into the int32 lane in
// one instruction: the same exact int32 lanes as AVX2's madd + add. The per-row float work (the
// super-block scale, the mins) runs for the eight rows in one vector, lane by lane the scalar
// code's operations in its order.

/** A pair register: row 2p's 32 bytes at a, row 2p+1's at a + rb. */
static inline __m512i vnni_two_x32(const uint8_t *a, size_t rb) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)), _mm256_loadu_si256((const __m256i *)(a + rb)), 1);
}
/** 16-bit scales: s0 over the low half (row 2p), s1 over the high half (row 2p+1). */
static inline __m512i vnni_sc16(int s0, int s1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)s0)), _mm256_set1_epi16((short)s1), 1);
}
/** Eight floats from eight halves at b, b + rb, …: the blocks' d (or, at offset 2, dmin). */
static inline __m256 vnni_halves(const uint8_t *b, size_t rb) {
  int16_t v[8];
  for (int r = 0; r < 8; r++) memcpy(&v[r], b + r * rb, 2);
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)v));
}

/** msum[r] += the eight rows' mins of two sub-blocks (m0, m1) times the sums of x[r]'s blocks u
 *  and u + 1, lane by lane as vd_q45_K_n adds them. */
static inline void vnni_kq_mins(__m256 m0, __m256 m1, const xrow_t *x, int NR, int64_t u, __m256 *msum) {
  for (int r = 0; r < NR; r++) {
    const __m256 t0 = _mm256_mul_ps(m0, _mm256_set1_ps(x[r].fs[2 * u] + x[r].fs[2 * u + 1]));
    const __m256 t1 = _mm256_mul_ps(m1, _mm256_set1_ps(x[r].fs[2 * u + 2] + x[r].fs[2 * u + 3]));
    msum[r] = _mm256_add_ps(msum[r], _mm256_add_ps(t0, t1));
  }
}

/** Rows w, w + rb, …, w + 7·rb (Q4_K, or Q5_K with five) times x, as vd_q45_K_n computes it. */
VNNI_KERNEL void vnni_q45_K_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride, int five) {
  const __m512i m4 = _mm512_set1_epi8(0x0f), one = _mm512_set1_epi8(1);
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  __m256 mins[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
  for (int64_t b = 0; b < nu / 8; b++) {
    const uint8_t *blk = w + b * us;
    vnni_step_prefetch(w, blk, rb, us, nu / 8, b, NR, VNNI_PF_STREAM); // steps: super-blocks
    int sc[8][8];
    int32_t mn[8][8]; // [sub-block][row]
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++) vd_scale_min(j, blk + i * rb + 4, &sc[j][i], &mn[j][i]);
    const __m256 wd = vnni_halves(blk, rb), dmin = vnni_halves(blk + 2, rb);
    __m512i sumi[4][4];
    for (int r = 0; r < NR; r++)
      for (int p = 0; p < 4; p++) sumi[r][p] = _mm512_setzero_si512();
    __m256 msum[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    const uint8_t *qs = blk + (five ? 48 : 16);
    for (int j = 0; j < 4; j++) {
      const int64_t u = 8 * b + 2 * j;
      const __m256 m0 = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)mn[2 * j]));
      const __m256 m1 = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)mn[2 * j + 1]));
      vnni_kq_mins(m0, m1, x, NR, u, msum);
      for (int p = 0; p < 4; p++) {
        const __m512i bits = vnni_two_x32(qs + 2 * p * rb + 32 * j, rb);
        __m512i lo = _mm512_and_si512(bits, m4), hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
        if (five) {
          const __m512i hb = vnni_two_x32(blk + 16 + 2 * p * rb, rb);
          lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 2 * j), one), 4));
          hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 2 * j + 1), one), 4));
        }
        const __m512i s0 = vnni_sc16(sc[2 * j][2 * p], sc[2 * j][2 * p + 1]), s1 = vnni_sc16(sc[2 * j + 1][2 * p], sc[2 * j + 1][2 * p + 1]);
        for (int r = 0; r < NR; r++) {
          sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(lo, XQ512(r, u)), s0);
          sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(hi, XQ512(r, u + 1)), s1);
        }
      }
    }
    for (int r = 0; r < NR; r++) {
      const __m256 s = _mm256_mul_ps(wd, _mm256_set1_ps(x[r].dx[8 * b]));
      for (int p = 0; p < 4; p++) acc[r][p] = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(sumi[r][p]), acc[r][p]);
      mins[r] = _mm256_add_ps(mins[r], _mm256_mul_ps(dmin, msum[r]));
    }
  }
  for (int r = 0; r < NR; r++) {
    float e[8];
    _mm256_storeu_ps(e, mins[r]);
    vnni_finish(acc[r], out + r * ostride);
    for (int i = 0; i < 8; i++) out[r * ostride + i] -= e[i];
  }
}

/** vnni_q45_K_n on k_repack's split layout (matmul.c, split_fields): a step holds the eight rows'
 *  d, dmin, the three 32-bit words of their packed 6-bit scales and mins (each word of the eight
 *  rows side by side), (Q5_K) their fifth bits and their quants, each 16 bytes of a row's qh / qs
 *  a field, so that 64 bytes are rows 0–3 (or 4–7) of one field: a quad register, as in
 *  vnni_quads_n. The scales and mins of the eight rows are unpacked with vector operations (the
 *  scalar code's masks and shifts, lane by lane). qs bytes 32j + 16h + l hold values 16h + l of
 *  sub-blocks 2j (low nibble) and 2j + 1 (high), so the quad register of field 2j + h gives,
 *  in lane 4i + k, the integer lane 4h + k of row i's sub-block sums: vpdpwssd adds each
 *  sub-block's scale × maddubs pair sums, the same int32 lanes as the pair kernel, scaled,
 *  converted and accumulated by the same operations and summed in hsum_f32_avx2's tree. */
static const int32_t vnni_kq_rows[2][16] __attribute__((aligned(64))) = {
  { 0, 8, 0, 0, 1, 9, 1, 1, 2, 10, 2, 2, 3, 11, 3, 3 }, { 4, 12, 4, 4, 5, 13, 5, 5, 6, 14, 6, 6, 7, 15, 7, 7 } };

VNNI_KERNEL void vnni_q45_K_split_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride, int five) {
  const __m512i m4 = _mm512_set1_epi8(0x0f), k16 = _mm512_set1_epi8(16);
  const __m256i k3f = _mm256_set1_epi8(0x3f), k0f = _mm256_set1_epi8(0x0f), k03 = _mm256_set1_epi8(3), kff = _mm256_set1_epi32(0xff);
  const __m512i rows0 = _mm512_load_si512(vnni_kq_rows[0]), rows1 = _mm512_load_si512(vnni_kq_rows[1]);
  const size_t qh_at = 128, qs_at = five ? 384 : 128; // split fields: d, dmin, 3 scale words, (2 × 16 qh), 8 × 16 qs
  __m512 acc[4][4];
  __m256 mins[4];
  for (int r = 0; r < NR; r++) {
    for (int k = 0; k < 4; k++) acc[r][k] = _mm512_setzero_ps();
    mins[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nu / 8; b++) {
    const uint8_t *blk = w + b * us;
    vnni_step_prefetch(w, blk, rb, us, nu / 8, b, NR, VNNI_PF_WIDE); // steps: super-blocks
    const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk)), dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + 16)));
    // vd_scale_min for eight rows: byte s of lane i is row i's scale (min) of sub-block s (4 + s)
    const __m256i w0 = _mm256_loadu_si256((const __m256i *)(blk + 32)), w1 = _mm256_loadu_si256((const __m256i *)(blk + 64));
    const __m256i w2 = _mm256_loadu_si256((const __m256i *)(blk + 96));
    const __m256i sc_lo = _mm256_and_si256(w0, k3f), mn_lo = _mm256_and_si256(w1, k3f);
    const __m256i sc_hi = _mm256_or_si256(_mm256_and_si256(w2, k0f), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w0, 6), k03), 4));
    const __m256i mn_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), k0f), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w1, 6), k03), 4));
    // per quad, 128-bit lane i: row i's scales of sub-blocks 0–3 then 4–7 (bytes 0–7)
    const __m512i sc = _mm512_inserti64x4(_mm512_castsi256_si512(sc_lo), sc_hi, 1);
    const __m512i scq[2] = { _mm512_permutexvar_epi32(rows0, sc), _mm512_permutexvar_epi32(rows1, sc) };
    __m512i sumi[4][4];
    __m256 msum[4];
    for (int r = 0; r < NR; r++) {
      for (int k = 0; k < 4; k++) sumi[r][k] = _mm512_setzero_si512();
      msum[r] = _mm256_setzero_ps();
    }
    __m512i hb[2][2]; // [quad][half]: qh bytes 16h..16h+15 of the quad's rows
    if (five)
      for (int q = 0; q < 2; q++)
        for (int h = 0; h < 2; h++) hb[q][h] = _mm512_loadu_si512(blk + qh_at + 128 * h + 64 * q);
    for (int j = 0; j < 4; j++) {
      const int64_t u = 8 * b + 2 * j;
      const __m256i mn = j < 2 ? mn_lo : mn_hi;
      const __m256 m0 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(mn, 16 * (j & 1)), kff));
      const __m256 m1 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(mn, 16 * (j & 1) + 8), kff));
      vnni_kq_mins(m0, m1, x, NR, u, msum);
      // 16-bit scales of sub-blocks 2j, 2j + 1: byte 2j (2j + 1) of the lane's row, high bytes 0
      const __m512i pick0 = _mm512_set1_epi16((short)(0xff00 | (2 * j))), pick1 = _mm512_set1_epi16((short)(0xff00 | (2 * j + 1)));
      for (int q = 0; q < 2; q++) {
        const __m512i s0 = _mm512_shuffle_epi8(scq[q], pick0), s1 = _mm512_shuffle_epi8(scq[q], pick1);
        for (int h = 0; h < 2; h++) {
          const __m512i bits = _mm512_loadu_si512(blk + qs_at + 128 * (2 * j + h) + 64 * q);
          __m512i lo = _mm512_and_si512(bits, m4), hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
          if (five) { // + 16 where bit 2j (2j + 1) of the value's qh byte is set
            lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(hb[q][h], _mm512_set1_epi8((char)(1 << (2 * j)))), lo, k16);
            hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hb[q][h], _mm512_set1_epi8((char)(1 << (2 * j + 1)))), hi, k16);
          }
          for (int r = 0; r < NR; r++) {
            const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * u + 16 * h)));
            const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * (u + 1) + 16 * h)));
            sumi[r][2 * q + h] = _mm512_dpwssd_epi32(sumi[r][2 * q + h], _mm512_maddubs_epi16(lo, xlo), s0);
            sumi[r][2 * q + h] = _mm512_dpwssd_epi32(sumi[r][2 * q + h], _mm512_maddubs_epi16(hi, xhi), s1);
          }
        }
      }
    }
    for (int r = 0; r < NR; r++) {
      const __m256 s = _mm256_mul_ps(wd, _mm256_set1_ps(x[r].dx[8 * b]));
      const __m512 s0 = vnni_quad_scale(s, 0), s1 = vnni_quad_scale(s, 1);
      for (int k = 0; k < 4; k++) acc[r][k] = _mm512_fmadd_ps(k < 2 ? s0 : s1, _mm512_cvtepi32_ps(sumi[r][k]), acc[r][k]);
      mins[r] = _mm256_add_ps(mins[r], _mm256_mul_ps(dmin, msum[r]));
    }
  }
  for (int r = 0; r < NR; r++) _mm256_storeu_ps(out + r * ostride, _mm256_sub_ps(vnni_quads_sums(acc[r]), mins[r]));
}
#define vnni_q4_K_n(w, rb, us, x, NR, nu, out, os) vnni_q45_K_n(w, rb, us, x, NR, nu, out, os, 0)
#define vnni_q5_K_n(w, rb, us, x, NR, nu, out, os) vnni_q45_K_n(w, rb, us, x, NR, nu, out, os, 1)
#define vnni_q4_K_split_n(w, rb, us, x, NR, nu, out, os) vnni_q45_K_split_n(w, rb, us, x, NR, nu, out, os, 0)
#define vnni_q5_K_split_n(w, rb, us, x, NR, nu, out, os) vnni_q45_K_split_n(w, rb, us, x, NR, nu, out, os, 1)

/** Rows w, w + rb, …, w + 7·rb (Q6_K) times x, as vd_q6_K_n computes it. */
VNNI_KERNEL void vnni_q6_K_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(3), k32 = _mm512_set1_epi8(32);
  __m512 acc[4][4] = { VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4, VNNI_ZERO4 };
  for (int64_t b = 0; b < nu / 8; b++) {
    const uint8_t *blk = w + b * us;
    vnni_step_prefetch(w, blk, rb, us, nu / 8, b, NR, VNNI_PF_STREAM); // steps: super-blocks
    const __m256 wd = vnni_halves(blk + 208, rb);
    __m512i sumi[4][4];
    for (int r = 0; r < NR; r++)
      for (int p = 0; p < 4; p++) sumi[r][p] = _mm512_setzero_si512();
    for (int half = 0; half < 2; half++) {
      __m512i y32[4][4]; // Σ 32·y per pair, shared by the eight rows
      for (int r = 0; r < NR; r++)
        for (int k = 0; k < 4; k++) y32[r][k] = _mm512_maddubs_epi16(k32, XQ512(r, 8 * b + 4 * half + k));
      for (int p = 0; p < 4; p++) {
        const uint8_t *ql = blk + 2 * p * rb + 64 * half, *qh = blk + 2 * p * rb + 128 + 32 * half;
        const int8_t *sa = (const int8_t *)(blk + 2 * p * rb + 192 + 8 * half), *sb = sa + rb;
        const __m512i bits1 = vnni_two_x32(ql, rb), bits2 = vnni_two_x32(ql + 32, rb), h = vnni_two_x32(qh, rb);
        const __m512i q[4] = {
          _mm512_or_si512(_mm512_and_si512(bits1, m4), _mm512_slli_epi16(_mm512_and_si512(h, m2), 4)),
          _mm512_or_si512(_mm512_and_si512(bits2, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2), m2), 4)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(bits1, 4), m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 4), m2), 4)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(bits2, 4), m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 6), m2), 4)),
        };
        for (int k = 0; k < 4; k++) {
          // 128-bit lanes: row 2p's two sub-scales, then row 2p+1's.
          const __m512i scales = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16(sa[2 * k + 1]), _mm_set1_epi16(sa[2 * k]))),
                                                    _mm256_set_m128i(_mm_set1_epi16(sb[2 * k + 1]), _mm_set1_epi16(sb[2 * k])), 1);
          for (int r = 0; r < NR; r++) {
            const __m512i pr = _mm512_sub_epi16(_mm512_maddubs_epi16(q[k], XQ512(r, 8 * b + 4 * half + k)), y32[r][k]);
            sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], pr, scales);
          }
        }
      }
    }
    for (int r = 0; r < NR; r++) {
      const __m256 s = _mm256_mul_ps(wd, _mm256_set1_ps(x[r].dx[8 * b]));
      for (int p = 0; p < 4; p++) acc[r][p] = _mm512_fmadd_ps(vnni_pair_scale(s, p), _mm512_cvtepi32_ps(sumi[r][p]), acc[r][p]);
    }
  }
  for (int r = 0; r < NR; r++) vnni_finish(acc[r], out + r * ostride);
}

/** vnni_q6_K_n on k_repack's split layout (matmul.c, split_fields): each 16 bytes of a row's ql
 *  and qh a field (so 64 bytes are rows 0–3 or 4–7 of one field: a quad register), the eight rows'
 *  16 int8 scales side by side (64 bytes: rows 0–3, one per 128-bit lane), then the eight d. ql
 *  field f = 4h + 2a + e (values 16e.. of ql[64h + 32a + l]) with qh field 2h + e gives groups a
 *  (low nibbles, qh bits 2a, 2a + 1) and 2 + a (high nibbles) of half h: 16 values of one
 *  sub-block per row, so each code register takes one scale vector (row i's scale over 128-bit
 *  lane i: a byte shuffle into the high bytes and an arithmetic shift), and its lane 4i + k is
 *  integer lane 4e + k of row i, as in vnni_quads_n: the pair kernel's int32 lanes, then its float
 *  operations in its order and hsum_f32_avx2's tree. */
VNNI_KERNEL void vnni_q6_K_split_n(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), k32 = _mm512_set1_epi8(32);
  const size_t qh_at = 1024, sc_at = 1536, d_at = 1664; // split fields: 8 × 16 ql, 4 × 16 qh, 16 scales, d
  __m512 acc[4][4];
  for (int r = 0; r < NR; r++)
    for (int k = 0; k < 4; k++) acc[r][k] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nu / 8; b++) {
    const uint8_t *blk = w + b * us;
    vnni_step_prefetch(w, blk, rb, us, nu / 8, b, NR, VNNI_PF_SPLIT6); // steps: super-blocks (prefetch.h)
    const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + d_at)));
    const __m512i scq[2] = { _mm512_loadu_si512(blk + sc_at), _mm512_loadu_si512(blk + sc_at + 64) };
    __m512i sumi[4][4];
    for (int r = 0; r < NR; r++)
      for (int k = 0; k < 4; k++) sumi[r][k] = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++)
      for (int a = 0; a < 2; a++)
        for (int e = 0; e < 2; e++) {
          const int64_t ulo = 8 * b + 4 * h + a, uhi = ulo + 2;    // x blocks of groups a, 2 + a
          const int sblo = 8 * h + 2 * a + e, sbhi = sblo + 4;      // their sub-blocks
          const __m512i picklo = _mm512_set1_epi16((short)(sblo << 8 | 0x80)), pickhi = _mm512_set1_epi16((short)(sbhi << 8 | 0x80));
          __m512i xlo[4], xhi[4], ylo[4], yhi[4]; // x's 16 values, maddubs(32, x)
          for (int r = 0; r < NR; r++) {
            xlo[r] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * ulo + 16 * e)));
            xhi[r] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x[r].q + 32 * uhi + 16 * e)));
            ylo[r] = _mm512_maddubs_epi16(k32, xlo[r]);
            yhi[r] = _mm512_maddubs_epi16(k32, xhi[r]);
          }
          for (int q = 0; q < 2; q++) {
            const __m512i ql = _mm512_loadu_si512(blk + 128 * (4 * h + 2 * a + e) + 64 * q);
            const __m512i qh = _mm512_loadu_si512(blk + qh_at + 128 * (2 * h + e) + 64 * q);
            // codes 0..63: the nibble, and qh's bits 2a, 2a + 1 (4 + 2a, 5 + 2a) as bits 4, 5
            const __m512i lo = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(a ? _mm512_slli_epi16(qh, 2) : _mm512_slli_epi16(qh, 4), m30));
            const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), _mm512_and_si512(a ? _mm512_srli_epi16(qh, 2) : qh, m30));
            const __m512i slo = _mm512_srai_epi16(_mm512_shuffle_epi8(scq[q], picklo), 8), shi = _mm512_srai_epi16(_mm512_shuffle_epi8(scq[q], pickhi), 8);
            for (int r = 0; r < NR; r++) {
              sumi[r][2 * q + e] = _mm512_dpwssd_epi32(sumi[r][2 * q + e], _mm512_sub_epi16(_mm512_maddubs_epi16(lo, xlo[r]), ylo[r]), slo);
              sumi[r][2 * q + e] = _mm512_dpwssd_epi32(sumi[r][2 * q + e], _mm512_sub_epi16(_mm512_maddubs_epi16(hi, xhi[r]), yhi[r]), shi);
            }
          }
        }
    for (int r = 0; r < NR; r++) {
      const __m256 s = _mm256_mul_ps(wd, _mm256_set1_ps(x[r].dx[8 * b]));
      const __m512 s0 = vnni_quad_scale(s, 0), s1 = vnni_quad_scale(s, 1);
      for (int k = 0; k < 4; k++) acc[r][k] = _mm512_fmadd_ps(k < 2 ? s0 : s1, _mm512_cvtepi32_ps(sumi[r][k]), acc[r][k]);
    }
  }
  for (int r = 0; r < NR; r++) _mm256_storeu_ps(out + r * ostride, vnni_quads_sums(acc[r]));
}
#undef XQ512

typedef void (*vnni_fn)(const uint8_t *, size_t, size_t, const xrow_t *, int64_t, float *, int64_t);
#define VNNI_PAIR(name) \
  static void name##_x1(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int64_t nu, float *out, int64_t os) { name##_n(w, rb, us, x, 1, nu, out, os); } \
  static void name##_x4(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int64_t nu, float *out, int64_t os) { name##_n(w, rb, us, x, 4, nu, out, os); }
VNNI_PAIR(vnni_q4_1)
VNNI_PAIR(vnni_q8_0)
VNNI_PAIR(vnni_q5_0)
VNNI_PAIR(vnni_q5_1)
VNNI_PAIR(vnni_q4_K)
VNNI_PAIR(vnni_q5_K)
VNNI_PAIR(vnni_q6_K)
VNNI_PAIR(vnni_q8_0_split)
VNNI_PAIR(vnni_q4_0_split)
VNNI_PAIR(vnni_q4_K_split)
VNNI_PAIR(vnni_q5_K_split)
VNNI_PAIR(vnni_q6_K_split)
#undef VNNI_PAIR
#define VNNI_QUADS(name, T) \
  static void name##_x1(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int64_t nu, float *out, int64_t os) { vnni_quads_n(T, w, rb, us, x, 1, nu, out, os); } \
  static void name##_x4(const uint8_t *w, size_t rb, size_t us, const xrow_t *x, int64_t nu, float *out, int64_t os) { vnni_quads_n(T, w, rb, us, x, 4, nu, out, os); }
VNNI_QUADS(vnni_q4_1_split, T_Q4_1)
VNNI_QUADS(vnni_q5_0_split, T_Q5_0)
VNNI_QUADS(vnni_q5_1_split, T_Q5_1)
#undef VNNI_QUADS

typedef struct { vnni_fn x1, x4; } vnni_pair;

/** The eight-row kernels of a type: on the file's layout, or (split) on k_repack's split one.
 *  Q4_0 has them only on the split layout (a weight of eight rows or more is always repacked on a
 *  VNNI CPU; on the file's layout vnni_chunk takes the AVX2 kernel). */
static vnni_pair vnni_for(int type, int split) {
  if (split)
    switch (type) {
      case T_Q4_0: return (vnni_pair){ vnni_q4_0_split_x1, vnni_q4_0_split_x4 };
      case T_Q4_1: return (vnni_pair){ vnni_q4_1_split_x1, vnni_q4_1_split_x4 };
      case T_Q8_0: return (vnni_pair){ vnni_q8_0_split_x1, vnni_q8_0_split_x4 };
      case T_Q5_0: return (vnni_pair){ vnni_q5_0_split_x1, vnni_q5_0_split_x4 };
      case T_Q5_1: return (vnni_pair){ vnni_q5_1_split_x1, vnni_q5_1_split_x4 };
      case T_Q4_K: return (vnni_pair){ vnni_q4_K_split_x1, vnni_q4_K_split_x4 };
      case T_Q5_K: return (vnni_pair){ vnni_q5_K_split_x1, vnni_q5_K_split_x4 };
      case T_Q6_K: return (vnni_pair){ vnni_q6_K_split_x1, vnni_q6_K_split_x4 };
      default: break;
    }
  switch (type) {
    case T_Q4_1: return (vnni_pair){ vnni_q4_1_x1, vnni_q4_1_x4 };
    case T_Q8_0: return (vnni_pair){ vnni_q8_0_x1, vnni_q8_0_x4 };
    case T_Q5_0: return (vnni_pair){ vnni_q5_0_x1, vnni_q5_0_x4 };
    case T_Q5_1: return (vnni_pair){ vnni_q5_1_x1, vnni_q5_1_x4 };
    case T_Q4_K: return (vnni_pair){ vnni_q4_K_x1, vnni_q4_K_x4 };
    case T_Q5_K: return (vnni_pair){ vnni_q5_K_x1, vnni_q5_K_x4 };
    case T_Q6_K: return (vnni_pair){ vnni_q6_K_x1, vnni_q6_K_x4 };
    default: return (vnni_pair){ NULL, NULL };
  }
}

/** Bytes of one block step of a type's kernel (a block, or a K-quant's super-block). */
static size_t vnni_block_bytes(int type) {
  switch (type) {
    case T_Q4_0: return 18;
    case T_Q4_1: return 20;
    case T_Q5_0: return 22;
    case T_Q5_1: return 24;
    case T_Q8_0: return 34;
    case T_Q4_K: return 144;
    case T_Q5_K: return 176;
    case T_Q6_K: return 210;
    default: return 0;
  }
}

/** The offset k of the signed types in llama.cpp's vec_dot order (vpdpbusd's unsigned codes are
 *  q + k; vnni_signed_nk's −k·Σx lanes), 0 for the other types. Q4_0's kernels, in their own
 *  order, subtract 8·Σx from whole-block sums (x->sx). */
static int vnni_signed_k(int type) {
  switch (type) {
    case T_Q5_0: return 16;
    case T_Q8_0: return 128;
    default: return 0;
  }
}

/** x->nk = nk, filled with −k·Σx per 32-bit lane of each block: the correction of vnni_signed_n. */
static void vnni_signed_nk(xrow_t *x, int64_t nu, int k, int32_t *nk) {
  const __m256i kb = _mm256_set1_epi8((char)k), zero = _mm256_setzero_si256();
  for (int64_t u = 0; u < nu; u++)
    _mm256_storeu_si256((__m256i *)(nk + 8 * u), _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, kb, _mm256_loadu_si256((const __m256i *)(x->q + 32 * u)))));
  x->nk = nk;
}

#include "vecdot_vnni_t.h"

/** vd_chunk with eight weight rows per call; rows past a multiple of eight take the AVX2 kernel.
 *  Repacked weights (m->packed, vnni_repack) hold each group of eight rows block-interleaved: the
 *  kernel then reads one sequential stream. Same bits either way. Prompts of the signed types
 *  take vecdot_vnni_t.h's kernel for whole groups of 16 rows (same bits again). */
static void vnni_chunk(void *p, int64_t blk, int ith) {
  const mm_t *m = p;
  const vnni_pair f8 = vnni_for(m->type, m->packed && split_fields(m->type));
  const vd_pair f1 = vd_for(m->type);
  const size_t bs = vnni_block_bytes(m->type), rs = m->packed ? bs : m->rb, us = m->packed ? 8 * bs : bs;
  const int64_t nu = m->cols / 32, rows = m->rows, r1 = (blk + 1) * VD_ROWS < rows ? (blk + 1) * VD_ROWS : rows;
  int64_t r0 = blk * VD_ROWS;
  const int kq = m->type == T_Q4_K || m->type == T_Q5_K || m->type == T_Q6_K;
  if (m->T >= VT_MIN_T && (vt_supported(m->type) || kq) && r1 - r0 >= VT_ROWS) {
    const int g = (int)((r1 - r0) / VT_ROWS);
    if (m->type == T_Q6_K) vt6_chunk_rows(m, r0, g, ith);
    else if (kq) vt45_chunk_rows(m, r0, g, ith);
    else if (m->type == T_Q4_0) vt_q4_0_chunk_rows(m, r0, g, ith);
    else vt_chunk_rows(m, r0, g, ith);
    r0 += (int64_t)g * VT_ROWS;
    if (r0 == r1) return;
  }
  const int64_t r8 = f8.x1 ? r0 + (r1 - r0) / VNNI_ROWS * VNNI_ROWS : r0; // rows the eight-row kernel takes
  const int k = vnni_signed_k(m->type);
  int32_t *nk = k ? pool_scratch(ith, 0, (size_t)(4 * 8 * nu) * sizeof(int32_t)) : NULL;
  int64_t t = 0;
  for (; t + 4 <= m->T; t += 4) {
    xrow_t xr[4] = { xrow_at(m, t), xrow_at(m, t + 1), xrow_at(m, t + 2), xrow_at(m, t + 3) };
    if (k)
      for (int i = 0; i < 4; i++) vnni_signed_nk(&xr[i], nu, k, nk + 8 * nu * i);
    float *out = m->out + t * rows;
    int64_t r = r0;
    for (; r < r8; r += VNNI_ROWS) f8.x4(m->w + r * m->rb, rs, us, xr, nu, out + r, rows);
    for (; r < r1; r++) {
      float o[4];
      f1.x4(m->w + r * m->rb, xr, nu, o);
      for (int k = 0; k < 4; k++) out[k * rows + r] = o[k];
    }
  }
  for (; t < m->T; t++) {
    xrow_t xr = xrow_at(m, t);
    if (k) vnni_signed_nk(&xr, nu, k, nk);
    float *out = m->out + t * rows;
    int64_t r = r0;
    for (; r < r8; r += VNNI_ROWS) f8.x1(m->w + r * m->rb, rs, us, &xr, nu, out + r, rows);
    for (; r < r1; r++) f1.x1(m->w + r * m->rb, &xr, nu, out + r);
  }
}
