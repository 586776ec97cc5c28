// Prompt products of the signed types (Q4_0, Q5_0, Q8_0) on a transposed copy of 16 weight rows,
// with AVX-512 VNNI. Included by vecdot_vnni.h's user (matmul.c) after it, inside the AVX-512
// target region; vnni_chunk takes it for prompts (T ≥ VT_MIN_T).
//
// Same bits as vnni_signed_n, for the same reason that kernel has the one-row kernel's bits: each
// output's eight lanes (lane j: the integer dot of bytes 4j..4j+3 of a 32-value block) are summed
// block after block as acc_j = fma(d·dx, float(Σ_j), acc_j), and the eight lanes end in
// hsum_f32_avx2's tree ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
// What changes is where the lanes sit: vnni_signed_n holds two weight rows × eight lanes per
// register, so each register needs its own d·dx product (16 lanes, two values); here register j
// holds lane j of sixteen weight rows for one activation row, so one product d[16]·dx scales all
// eight registers of a block: per 16 outputs and block 8 dot instructions, 8 conversions,
// 1 product and 8 FMAs instead of 8, 8, 8 and 8. The tree is then eight vertical adds.
// The weights must be in that layout: each chunk rewrites its rows' blocks once (vt_transpose,
// unsigned codes q + k as vnni_signed_n takes them), a cost of 1/T of the product.

#define VT_ROWS 16
#define VT_MIN_T 16

/** One block of 16 weight rows: q[j] holds the unsigned codes of bytes 4j..4j+3 of row i at
 *  bytes 4i..4i+3; d the rows' scales. */
typedef struct { uint8_t q[8][64]; float d[16]; } vt_block_t;

/** Whether vt_chunk_rows runs this type (the signed types of vnni_signed_n). */
static inline int vt_supported(int type) { return type == T_Q4_0 || type == T_Q5_0 || type == T_Q8_0; }

/** Block u of weight row r, in the file's layout or k_repack's (whole groups of eight rows). */
static inline const uint8_t *vt_block(const mm_t *m, size_t bs, int64_t r, int64_t u) {
  if (m->packed && (r / VNNI_ROWS + 1) * VNNI_ROWS <= m->rows) return m->w + (r / VNNI_ROWS) * VNNI_ROWS * m->rb + (u * VNNI_ROWS + r % VNNI_ROWS) * bs;
  return m->w + r * m->rb + u * bs;
}

/** A block's 32 unsigned codes (q + k: the values vnni_q*_0_n feed vpdpbusd) and its scale. */
static inline __m256i vt_codes(int type, const uint8_t *b, float *d) {
  uint16_t h;
  memcpy(&h, b, 2);
  *d = _cvtsh_ss(h);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  if (type == T_Q8_0) return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(b + 2)), _mm256_set1_epi8((char)0x80));
  const int off = type == T_Q5_0 ? 6 : 2;
  const __m128i qs = _mm_loadu_si128((const __m128i *)(b + off));
  // values 0..15: low nibbles, 16..31: high nibbles
  const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), m4);
  if (type == T_Q4_0) return nib;
  uint32_t qh;
  memcpy(&qh, b + 2, 4);
  return _mm256_mask_add_epi8(nib, _cvtu32_mask32(qh), nib, _mm256_set1_epi8(16));
}

/** Rows r0..r0+15 of m, every block, into t[0..nu). */
static void vt_transpose(const mm_t *m, size_t bs, int64_t r0, int64_t nu, vt_block_t *t) {
  for (int64_t u = 0; u < nu; u++)
    for (int i = 0; i < VT_ROWS; i++) {
      uint32_t c[8];
      _mm256_storeu_si256((__m256i *)c, vt_codes(m->type, vt_block(m, bs, r0 + i, u), &t[u].d[i]));
      for (int j = 0; j < 8; j++) memcpy(&t[u].q[j][4 * i], &c[j], 4);
    }
}

/** The 16 transposed rows t times NR (1 or 2) activation rows: out[r * ostride + i]. */
VNNI_KERNEL void vt_signed_n(const vt_block_t *t, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  __m512 acc[2][8];
  for (int r = 0; r < NR; r++)
    for (int j = 0; j < 8; j++) acc[r][j] = _mm512_setzero_ps();
  for (int64_t u = 0; u < nu; u++) {
    const __m512 d = _mm512_load_ps(t[u].d);
    __m512i wq[8];
    for (int j = 0; j < 8; j++) wq[j] = _mm512_load_si512(t[u].q[j]);
    for (int r = 0; r < NR; r++) {
      const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(x[r].dx[u])); // d·dx, the same product per lane
      const int32_t *xq = (const int32_t *)(x[r].q + 32 * u), *nk = x[r].nk + 8 * u;
      for (int j = 0; j < 8; j++) {
        const __m512i sum = _mm512_dpbusd_epi32(_mm512_set1_epi32(nk[j]), wq[j], _mm512_set1_epi32(xq[j]));
        acc[r][j] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(sum), acc[r][j]);
      }
    }
  }
  for (int r = 0; r < NR; r++) { // hsum_f32_avx2's tree, lane by lane
    const __m512 s0 = _mm512_add_ps(acc[r][0], acc[r][4]), s1 = _mm512_add_ps(acc[r][1], acc[r][5]);
    const __m512 s2 = _mm512_add_ps(acc[r][2], acc[r][6]), s3 = _mm512_add_ps(acc[r][3], acc[r][7]);
    _mm512_storeu_ps(out + r * ostride, _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3)));
  }
}
static void vt_signed_x1(const vt_block_t *t, const xrow_t *x, int64_t nu, float *out, int64_t os) { vt_signed_n(t, x, 1, nu, out, os); }
static void vt_signed_x2(const vt_block_t *t, const xrow_t *x, int64_t nu, float *out, int64_t os) { vt_signed_n(t, x, 2, nu, out, os); }

/** Rows [r0, r0 + 16·g) of a prompt product (g whole groups of 16), every activation row. */
static void vt_chunk_rows(const mm_t *m, int64_t r0, int g, int ith) {
  const size_t bs = vnni_block_bytes(m->type);
  const int64_t nu = m->cols / 32, rows = m->rows;
  const int k = vnni_signed_k(m->type);
  vt_block_t *t = pool_scratch(ith, 2, (size_t)g * nu * sizeof(vt_block_t));
  int32_t *nk = pool_scratch(ith, 0, (size_t)(2 * 8 * nu) * sizeof(int32_t));
  for (int i = 0; i < g; i++) vt_transpose(m, bs, r0 + VT_ROWS * i, nu, t + i * nu);
  int64_t r = 0;
  for (; r + 2 <= m->T; r += 2) {
    xrow_t xr[2] = { xrow_at(m, r), xrow_at(m, r + 1) };
    vnni_signed_nk(&xr[0], nu, k, nk);
    vnni_signed_nk(&xr[1], nu, k, nk + 8 * nu);
    for (int i = 0; i < g; i++) vt_signed_x2(t + i * nu, xr, nu, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
  for (; r < m->T; r++) {
    xrow_t xr = xrow_at(m, r);
    vnni_signed_nk(&xr, nu, k, nk);
    for (int i = 0; i < g; i++) vt_signed_x1(t + i * nu, &xr, nu, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
}
