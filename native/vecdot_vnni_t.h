// Prompt products of the signed types (Q4_0, Q5_0, Q8_0) and the K-quants (Q4_K, Q5_K, Q6_K; at the
// end) on a transposed copy of 16 weight rows, with AVX-512 VNNI. Included by vecdot_vnni.h before
// vnni_chunk, inside matmul.c's AVX-512 target region; vnni_chunk takes it for prompts (T ≥ VT_MIN_T).
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
// Q4_0 takes its own order there (vt_q4_0_n: vd_q4_0_n's, one integer sum per block), eight dot
// instructions, one conversion and one FMA per block and 16 outputs.
// The weights must be in that layout: each chunk rewrites its rows' blocks once (vt_transpose,
// unsigned codes q + k as vnni_signed_n takes them), a cost of 1/T of the product.

#define VT_ROWS 16
#define VT_MIN_T 12 // below it the transposition costs more than it saves (CPU time, SmolLM2 shapes)

/** One block of 16 weight rows: q[j] holds the unsigned codes of bytes 4j..4j+3 of row i at
 *  bytes 4i..4i+3; d the rows' scales. */
typedef struct { uint8_t q[8][64]; float d[16]; } vt_block_t;

/** Whether vt_chunk_rows runs this type (the signed types of vnni_signed_n). */
static inline int vt_supported(int type) { return type == T_Q4_0 || type == T_Q5_0 || type == T_Q8_0; }

/** Block u of weight row r, in the file's layout or k_repack's (whole groups of eight rows; a
 *  split step's block is gathered into tmp, bs bytes). */
static inline const uint8_t *vt_block(const mm_t *m, size_t bs, int64_t r, int64_t u, uint8_t *tmp) {
  if (!m->packed || (r / VNNI_ROWS + 1) * VNNI_ROWS > m->rows) return m->w + r * m->rb + u * bs;
  const uint8_t *step = m->w + (r / VNNI_ROWS) * VNNI_ROWS * m->rb + u * VNNI_ROWS * bs, *fields = split_fields(m->type);
  if (!fields) return step + (r % VNNI_ROWS) * bs;
  split_get(fields, step, (int)(r % VNNI_ROWS), tmp);
  return tmp;
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

// vt_transpose's permutes (permutex2var: lanes 0..15 from the first source, 16..31 the second).
// Level 1, two registers of rows (r0, r1 | r2, r3) → lane 4j + r = dword j of row r, j < 4 (L)
// or j + 4 (H). Level 2, two such (rows 0..3 | 4..7) → lane 8jj + r = dword j of row r, j = jj (a)
// or jj + 2 (b). Level 3 joins the 256-bit halves of rows 0..7 and 8..15.
static int32_t vt_idx[4][16] __attribute__((aligned(64)));
static void vt_init_idx(void) {
  for (int j = 0; j < 4; j++)
    for (int r = 0; r < 4; r++) {
      vt_idx[0][4 * j + r] = 8 * r + j;
      vt_idx[1][4 * j + r] = 8 * r + j + 4;
    }
  for (int jj = 0; jj < 2; jj++)
    for (int r = 0; r < 8; r++) {
      vt_idx[2][8 * jj + r] = (r < 4 ? 0 : 16) + 4 * jj + r % 4;
      vt_idx[3][8 * jj + r] = (r < 4 ? 0 : 16) + 4 * (jj + 2) + r % 4;
    }
}

/** Sixteen rows' 32 codes each (z[p]: row 2p in the low half, 2p + 1 in the high) into
 *  q[j] (lane i: bytes 4j..4j+3 of row i): three levels of permutes. */
static inline void vt_transpose16(const __m512i *z, uint8_t (*q)[64]) {
  static int ready; // the tables are the same for every caller; filling them twice is harmless
  if (!ready) { vt_init_idx(); ready = 1; }
  const __m512i i1L = _mm512_load_si512(vt_idx[0]), i1H = _mm512_load_si512(vt_idx[1]);
  const __m512i i2a = _mm512_load_si512(vt_idx[2]), i2b = _mm512_load_si512(vt_idx[3]);
  const __m512i i3lo = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0), i3hi = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
  __m512i L[4], H[4], M[2][4];
  for (int k = 0; k < 4; k++) {
    L[k] = _mm512_permutex2var_epi32(z[2 * k], i1L, z[2 * k + 1]);
    H[k] = _mm512_permutex2var_epi32(z[2 * k], i1H, z[2 * k + 1]);
  }
  for (int h = 0; h < 2; h++) {
    M[h][0] = _mm512_permutex2var_epi32(L[2 * h], i2a, L[2 * h + 1]);
    M[h][1] = _mm512_permutex2var_epi32(L[2 * h], i2b, L[2 * h + 1]);
    M[h][2] = _mm512_permutex2var_epi32(H[2 * h], i2a, H[2 * h + 1]);
    M[h][3] = _mm512_permutex2var_epi32(H[2 * h], i2b, H[2 * h + 1]);
  }
  for (int k = 0; k < 4; k++) {
    _mm512_store_si512((void *)q[2 * k], _mm512_permutex2var_epi64(M[0][k], i3lo, M[1][k]));
    _mm512_store_si512((void *)q[2 * k + 1], _mm512_permutex2var_epi64(M[0][k], i3hi, M[1][k]));
  }
}

/** vt_transpose on k_repack's split layout (matmul.c, split_fields): rows r0..r0+15 are two whole
 *  groups of eight, and each step's fields of eight rows are read as vectors: the scales at once,
 *  rows 2p and 2p + 1 of Q8_0 as one register, of Q4_0 and Q5_0 as one 32-byte load spread to
 *  the same codes vt_codes gives (low nibbles, then high, per row; plus the fifth bits). */
static void vt_transpose_split(const mm_t *m, int64_t r0, int64_t nu, vt_block_t *t) {
  const size_t step = VNNI_ROWS * vnni_block_bytes(m->type);
  const uint8_t *group[2] = { m->w + r0 * m->rb, m->w + (r0 + VNNI_ROWS) * m->rb };
  const int q8 = m->type == T_Q8_0, five = m->type == T_Q5_0, qs_at = five ? 48 : 16;
  const __m512i counts = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i m4 = _mm512_set1_epi8(0x0f), k16 = _mm512_set1_epi8(16), flip = _mm512_set1_epi8((char)0x80);
  for (int64_t u = 0; u < nu; u++) {
    __m512i z[8];
    for (int h = 0; h < 2; h++) {
      const uint8_t *st = group[h] + u * step;
      _mm256_storeu_ps(t[u].d + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)st)));
      for (int p = 0; p < 4; p++) {
        __m512i v;
        if (q8) v = _mm512_xor_si512(_mm512_loadu_si512(st + 16 + 64 * p), flip);
        else {
          const __m512i qs = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(st + qs_at + 32 * p)));
          v = _mm512_and_si512(_mm512_srlv_epi16(_mm512_shuffle_i64x2(qs, qs, 0x50), counts), m4); // [a a b b] → lo, hi nibbles
          if (five) {
            uint64_t qh;
            memcpy(&qh, st + 16 + 8 * p, 8); // the pair's fifth-bit words: bit j of each half is its value j
            v = _mm512_mask_add_epi8(v, _cvtu64_mask64(qh), v, k16);
          }
        }
        z[4 * h + p] = v;
      }
    }
    vt_transpose16(z, t[u].q);
  }
}

/** Rows r0..r0+15 of m, every block, into t[0..nu). */
static void vt_transpose(const mm_t *m, size_t bs, int64_t r0, int64_t nu, vt_block_t *t) {
  if (m->packed && split_fields(m->type)) { vt_transpose_split(m, r0, nu, t); return; }
  for (int64_t u = 0; u < nu; u++) {
    __m512i z[8];
    for (int p = 0; p < 8; p++) {
      const __m256i lo = vt_codes(m->type, vt_block(m, bs, r0 + 2 * p, u, NULL), &t[u].d[2 * p]); // not split: vt_transpose_split
      const __m256i hi = vt_codes(m->type, vt_block(m, bs, r0 + 2 * p + 1, u, NULL), &t[u].d[2 * p + 1]);
      z[p] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    vt_transpose16(z, t[u].q);
  }
}

/** A transposed block's eight registers of codes into wq; returns its 16 rows' scales. */
static inline __m512 vt_load(const vt_block_t *b, __m512i *wq) {
  for (int j = 0; j < 8; j++) wq[j] = _mm512_load_si512(b->q[j]);
  return _mm512_load_ps(b->d);
}

/** The 16 transposed rows t times NR (1 or 2) activation rows: out[r * ostride + i]. */
VNNI_KERNEL void vt_signed_n(const vt_block_t *t, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  __m512 acc[2][8];
  for (int r = 0; r < NR; r++)
    for (int j = 0; j < 8; j++) acc[r][j] = _mm512_setzero_ps();
  for (int64_t u = 0; u < nu; u++) {
    __m512i wq[8];
    const __m512 d = vt_load(&t[u], wq);
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
/** Q4_0 in its own order (vd_q4_0_n's, llama.cpp's repacked kernels'): per block the exact integer
 *  dot of the 16 rows, Σ (q + 8)·x − 8·Σx over the block's eight 32-bit words in two chains of
 *  vpdpbusd, then acc = fma(float(Σ q·x), d·dx, acc): per 16 outputs and block 8 dot
 *  instructions, 1 conversion, 1 product and 1 FMA. */
VNNI_KERNEL void vt_q4_0_n(const vt_block_t *t, const xrow_t *x, int NR, int64_t nu, float *out, int64_t ostride) {
  __m512 acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
  for (int64_t u = 0; u < nu; u++) {
    __m512i wq[8];
    const __m512 d = vt_load(&t[u], wq);
    for (int r = 0; r < NR; r++) {
      const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(x[r].dx[u])); // d·dx, the same product per lane
      const int32_t *xq = (const int32_t *)(x[r].q + 32 * u);
      __m512i a = _mm512_dpbusd_epi32(_mm512_set1_epi32(-8 * x[r].sx[u]), wq[0], _mm512_set1_epi32(xq[0]));
      __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[1], _mm512_set1_epi32(xq[1]));
      for (int j = 2; j < 8; j += 2) {
        a = _mm512_dpbusd_epi32(a, wq[j], _mm512_set1_epi32(xq[j]));
        b = _mm512_dpbusd_epi32(b, wq[j + 1], _mm512_set1_epi32(xq[j + 1]));
      }
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a, b)), s, acc[r]);
    }
  }
  for (int r = 0; r < NR; r++) _mm512_storeu_ps(out + r * ostride, acc[r]);
}
static void vt_signed_x1(const vt_block_t *t, const xrow_t *x, int64_t nu, float *out, int64_t os) { vt_signed_n(t, x, 1, nu, out, os); }
static void vt_signed_x2(const vt_block_t *t, const xrow_t *x, int64_t nu, float *out, int64_t os) { vt_signed_n(t, x, 2, nu, out, os); }
static void vt_q4_0_x1(const vt_block_t *t, const xrow_t *x, int64_t nu, float *out, int64_t os) { vt_q4_0_n(t, x, 1, nu, out, os); }
static void vt_q4_0_x4(const vt_block_t *t, const xrow_t *x, int64_t nu, float *out, int64_t os) { vt_q4_0_n(t, x, 4, nu, out, os); }

/** Rows [r0, r0 + 16·g) of a prompt product (g whole groups of 16), every activation row. Not
 *  inlined (nor vt_q4_0_chunk_rows): inlined into vnni_chunk, as GCC chose once vnni_chunk had two
 *  of them, the Q5_0 and Q8_0 prompt products ran 7–10% slower (Ice Lake, paired rounds). */
__attribute__((noinline)) static void vt_chunk_rows(const mm_t *m, int64_t r0, int g, int ith) {
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

/** vt_chunk_rows for Q4_0 (vt_q4_0_n: four activation rows per pass while four remain; its
 *  correction comes from the rows' integer block sums, x->sx). */
__attribute__((noinline)) static void vt_q4_0_chunk_rows(const mm_t *m, int64_t r0, int g, int ith) {
  const int64_t nu = m->cols / 32, rows = m->rows;
  vt_block_t *t = pool_scratch(ith, 2, (size_t)g * nu * sizeof(vt_block_t));
  for (int i = 0; i < g; i++) vt_transpose(m, 18, r0 + VT_ROWS * i, nu, t + i * nu);
  int64_t r = 0;
  for (; r + 4 <= m->T; r += 4) {
    const xrow_t xr[4] = { xrow_at(m, r), xrow_at(m, r + 1), xrow_at(m, r + 2), xrow_at(m, r + 3) };
    for (int i = 0; i < g; i++) vt_q4_0_x4(t + i * nu, xr, nu, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
  for (; r < m->T; r++) {
    const xrow_t xr = xrow_at(m, r);
    for (int i = 0; i < g; i++) vt_q4_0_x1(t + i * nu, &xr, nu, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
}

// Q6_K the same way, per super-block of 256 values (8 groups of 32, 16 sub-blocks of 16 with
// their own int8 scale): vnni_q6_K_n's integer lanes (maddubs(q, x) − maddubs(32, x), then
// vpdpwssd with the sub-block's scale) and its one FMA per super-block and lane, on 16 rows
// per register. The sub-block scales differ per row, so they are a vector too (lane i: row i's
// scale in both 16-bit halves); maddubs(32, x) is the same for every row: once per activation row.

/** One super-block of 16 Q6_K rows: q[g][j] as vt_block_t's q for group g, sc[s] lane i = row
 *  i's scale of sub-block s (16 bits, twice), d the rows' scales. */
typedef struct { uint8_t q[8][8][64]; int32_t sc[16][16]; float d[16]; } vt6_block_t;

/** Row r's super-block b of m (Q6_K): its 8 groups' codes (0..63, as vnni_q6_K_n's q[k]). */
static inline void vt6_codes(const uint8_t *blk, __m256i *g) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
  for (int half = 0; half < 2; half++) {
    const uint8_t *ql = blk + 64 * half, *qh = blk + 128 + 32 * half;
    const __m256i bits1 = _mm256_loadu_si256((const __m256i *)ql), bits2 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    g[4 * half + 0] = _mm256_or_si256(_mm256_and_si256(bits1, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
    g[4 * half + 1] = _mm256_or_si256(_mm256_and_si256(bits2, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
    g[4 * half + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits1, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
    g[4 * half + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits2, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
  }
}

/** Rows r0..r0+15 of m (Q6_K), every super-block, into t[0..nb). */
static void vt6_transpose(const mm_t *m, int64_t r0, int64_t nb, vt6_block_t *t) {
  for (int64_t b = 0; b < nb; b++) {
    __m256i codes[16][8];
    for (int i = 0; i < VT_ROWS; i++) {
      uint8_t tmp[210];
      const uint8_t *blk = vt_block(m, 210, r0 + i, b, tmp);
      vt6_codes(blk, codes[i]);
      uint16_t h;
      memcpy(&h, blk + 208, 2);
      t[b].d[i] = _cvtsh_ss(h);
      for (int sb = 0; sb < 16; sb++) {
        const uint16_t v = (uint16_t)(int16_t)(int8_t)blk[192 + sb];
        t[b].sc[sb][i] = (int32_t)((uint32_t)v | (uint32_t)v << 16);
      }
    }
    for (int g = 0; g < 8; g++) {
      __m512i z[8];
      for (int p = 0; p < 8; p++) z[p] = _mm512_inserti64x4(_mm512_castsi256_si512(codes[2 * p][g]), codes[2 * p + 1][g], 1);
      vt_transpose16(z, t[b].q[g]);
    }
  }
}

/** The 16 transposed Q6_K rows t times NR (1 or 2) activation rows; y32[r]: maddubs(32, x) of
 *  row r, one 32-bit word (two 16-bit sums) per 4 values. */
VNNI_KERNEL void vt6_n(const vt6_block_t *t, const xrow_t *x, const int32_t *const *y32, int NR, int64_t nb, float *out, int64_t ostride) {
  __m512 acc[2][8];
  for (int r = 0; r < NR; r++)
    for (int j = 0; j < 8; j++) acc[r][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    __m512i sumi[2][8];
    for (int r = 0; r < NR; r++)
      for (int j = 0; j < 8; j++) sumi[r][j] = _mm512_setzero_si512();
    for (int g = 0; g < 8; g++) {
      const __m512i sclo = _mm512_load_si512(t[b].sc[2 * g]), schi = _mm512_load_si512(t[b].sc[2 * g + 1]);
      for (int j = 0; j < 8; j++) {
        const __m512i wq = _mm512_load_si512(t[b].q[g][j]);
        for (int r = 0; r < NR; r++) {
          const int32_t *xq = (const int32_t *)(x[r].q + 256 * b + 32 * g);
          const __m512i pr = _mm512_sub_epi16(_mm512_maddubs_epi16(wq, _mm512_set1_epi32(xq[j])), _mm512_set1_epi32(y32[r][64 * b + 8 * g + j]));
          sumi[r][j] = _mm512_dpwssd_epi32(sumi[r][j], pr, j < 4 ? sclo : schi);
        }
      }
    }
    const __m512 d = _mm512_load_ps(t[b].d);
    for (int r = 0; r < NR; r++) {
      const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(x[r].dx[8 * b]));
      for (int j = 0; j < 8; j++) acc[r][j] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(sumi[r][j]), acc[r][j]);
    }
  }
  for (int r = 0; r < NR; r++) { // hsum_f32_avx2's tree, lane by lane
    const __m512 s0 = _mm512_add_ps(acc[r][0], acc[r][4]), s1 = _mm512_add_ps(acc[r][1], acc[r][5]);
    const __m512 s2 = _mm512_add_ps(acc[r][2], acc[r][6]), s3 = _mm512_add_ps(acc[r][3], acc[r][7]);
    _mm512_storeu_ps(out + r * ostride, _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3)));
  }
}
static void vt6_x1(const vt6_block_t *t, const xrow_t *x, const int32_t *const *y, int64_t nb, float *out, int64_t os) { vt6_n(t, x, y, 1, nb, out, os); }
static void vt6_x2(const vt6_block_t *t, const xrow_t *x, const int32_t *const *y, int64_t nb, float *out, int64_t os) { vt6_n(t, x, y, 2, nb, out, os); }

/** maddubs(32, x) of one activation row, cols values. */
static void vt6_y32(const xrow_t *x, int64_t cols, int32_t *y) {
  const __m512i k32 = _mm512_set1_epi8(32);
  for (int64_t c = 0; c < cols; c += 64) _mm512_storeu_si512((void *)(y + c / 4), _mm512_maddubs_epi16(k32, _mm512_loadu_si512(x->q + c)));
}

/** Rows [r0, r0 + 16·g) of a Q6_K prompt product, every activation row. */
static void vt6_chunk_rows(const mm_t *m, int64_t r0, int g, int ith) {
  const int64_t nb = m->cols / 256, rows = m->rows;
  vt6_block_t *t = pool_scratch(ith, 2, (size_t)g * nb * sizeof(vt6_block_t));
  int32_t *y = pool_scratch(ith, 0, (size_t)(2 * m->cols / 4) * sizeof(int32_t));
  for (int i = 0; i < g; i++) vt6_transpose(m, r0 + VT_ROWS * i, nb, t + i * nb);
  const int32_t *ys[2] = { y, y + m->cols / 4 };
  int64_t r = 0;
  for (; r + 2 <= m->T; r += 2) {
    xrow_t xr[2] = { xrow_at(m, r), xrow_at(m, r + 1) };
    vt6_y32(&xr[0], m->cols, y);
    vt6_y32(&xr[1], m->cols, y + m->cols / 4);
    for (int i = 0; i < g; i++) vt6_x2(t + i * nb, xr, ys, nb, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
  for (; r < m->T; r++) {
    xrow_t xr = xrow_at(m, r);
    vt6_y32(&xr, m->cols, y);
    for (int i = 0; i < g; i++) vt6_x1(t + i * nb, &xr, ys, nb, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
}

// Q4_K and Q5_K the same way (vnni_q45_K_n's operations): 8 sub-blocks of 32 per super-block,
// each with a 6-bit scale (a per-row vector for vpdpwssd) and a 6-bit min, whose term
// dmin·Σ m·(block sums of x) runs lane by lane on 16 rows as vnni_q45_K_n runs it on 8.

/** One super-block of 16 Q4_K/Q5_K rows: q[g][j] as vt_block_t's q for sub-block g, sc[g] lane
 *  i = row i's scale of sub-block g (16 bits, twice), mn[g] its min as a float, d and dmin. */
typedef struct { uint8_t q[8][8][64]; int32_t sc[8][16]; float mn[8][16]; float d[16], dmin[16]; } vt45_block_t;

/** Rows r0..r0+15 of m (Q4_K, or Q5_K with five), every super-block, into t[0..nb). */
static void vt45_transpose(const mm_t *m, int64_t r0, int64_t nb, vt45_block_t *t, int five) {
  const size_t bs = five ? 176 : 144;
  const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < nb; b++) {
    __m256i codes[16][8];
    for (int i = 0; i < VT_ROWS; i++) {
      uint8_t tmp[176];
      const uint8_t *blk = vt_block(m, bs, r0 + i, b, tmp);
      uint16_t h[2];
      memcpy(h, blk, 4);
      t[b].d[i] = _cvtsh_ss(h[0]);
      t[b].dmin[i] = _cvtsh_ss(h[1]);
      for (int g = 0; g < 8; g++) {
        int sc, mn;
        vd_scale_min(g, blk + 4, &sc, &mn);
        t[b].sc[g][i] = (int32_t)((uint32_t)(uint16_t)sc | (uint32_t)(uint16_t)sc << 16);
        t[b].mn[g][i] = (float)mn;
      }
      const uint8_t *qs = blk + (five ? 48 : 16);
      for (int j = 0; j < 4; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if (five) {
          const __m256i hb = _mm256_loadu_si256((const __m256i *)(blk + 16));
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), one), 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j + 1), one), 4));
        }
        codes[i][2 * j] = lo;
        codes[i][2 * j + 1] = hi;
      }
    }
    for (int g = 0; g < 8; g++) {
      __m512i z[8];
      for (int p = 0; p < 8; p++) z[p] = _mm512_inserti64x4(_mm512_castsi256_si512(codes[2 * p][g]), codes[2 * p + 1][g], 1);
      vt_transpose16(z, t[b].q[g]);
    }
  }
}

/** The 16 transposed Q4_K/Q5_K rows t times NR (1 or 2) activation rows. */
VNNI_KERNEL void vt45_n(const vt45_block_t *t, const xrow_t *x, int NR, int64_t nb, float *out, int64_t ostride) {
  __m512 acc[2][8], mins[2];
  for (int r = 0; r < NR; r++) {
    mins[r] = _mm512_setzero_ps();
    for (int j = 0; j < 8; j++) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; b++) {
    __m512i sumi[2][8];
    __m512 msum[2];
    for (int r = 0; r < NR; r++) {
      msum[r] = _mm512_setzero_ps();
      for (int j = 0; j < 8; j++) sumi[r][j] = _mm512_setzero_si512();
    }
    for (int jj = 0; jj < 4; jj++) { // the mins of sub-blocks 2jj, 2jj+1, as vnni_q45_K_n adds them
      const int64_t u = 8 * b + 2 * jj;
      const __m512 m0 = _mm512_load_ps(t[b].mn[2 * jj]), m1 = _mm512_load_ps(t[b].mn[2 * jj + 1]);
      for (int r = 0; r < NR; r++) {
        const __m512 t0 = _mm512_mul_ps(m0, _mm512_set1_ps(x[r].fs[2 * u] + x[r].fs[2 * u + 1]));
        const __m512 t1 = _mm512_mul_ps(m1, _mm512_set1_ps(x[r].fs[2 * u + 2] + x[r].fs[2 * u + 3]));
        msum[r] = _mm512_add_ps(msum[r], _mm512_add_ps(t0, t1));
      }
    }
    for (int g = 0; g < 8; g++) {
      const __m512i sc = _mm512_load_si512(t[b].sc[g]);
      for (int j = 0; j < 8; j++) {
        const __m512i wq = _mm512_load_si512(t[b].q[g][j]);
        for (int r = 0; r < NR; r++) {
          const int32_t *xq = (const int32_t *)(x[r].q + 256 * b + 32 * g);
          sumi[r][j] = _mm512_dpwssd_epi32(sumi[r][j], _mm512_maddubs_epi16(wq, _mm512_set1_epi32(xq[j])), sc);
        }
      }
    }
    const __m512 d = _mm512_load_ps(t[b].d), dmin = _mm512_load_ps(t[b].dmin);
    for (int r = 0; r < NR; r++) {
      const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(x[r].dx[8 * b]));
      for (int j = 0; j < 8; j++) acc[r][j] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(sumi[r][j]), acc[r][j]);
      mins[r] = _mm512_add_ps(mins[r], _mm512_mul_ps(dmin, msum[r]));
    }
  }
  for (int r = 0; r < NR; r++) { // hsum_f32_avx2's tree lane by lane, then the mins
    const __m512 s0 = _mm512_add_ps(acc[r][0], acc[r][4]), s1 = _mm512_add_ps(acc[r][1], acc[r][5]);
    const __m512 s2 = _mm512_add_ps(acc[r][2], acc[r][6]), s3 = _mm512_add_ps(acc[r][3], acc[r][7]);
    _mm512_storeu_ps(out + r * ostride, _mm512_sub_ps(_mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3)), mins[r]));
  }
}
static void vt45_x1(const vt45_block_t *t, const xrow_t *x, int64_t nb, float *out, int64_t os) { vt45_n(t, x, 1, nb, out, os); }
static void vt45_x2(const vt45_block_t *t, const xrow_t *x, int64_t nb, float *out, int64_t os) { vt45_n(t, x, 2, nb, out, os); }

/** Rows [r0, r0 + 16·g) of a Q4_K/Q5_K prompt product, every activation row. */
static void vt45_chunk_rows(const mm_t *m, int64_t r0, int g, int ith) {
  const int64_t nb = m->cols / 256, rows = m->rows;
  const int five = m->type == T_Q5_K;
  vt45_block_t *t = pool_scratch(ith, 2, (size_t)g * nb * sizeof(vt45_block_t));
  for (int i = 0; i < g; i++) vt45_transpose(m, r0 + VT_ROWS * i, nb, t + i * nb, five);
  int64_t r = 0;
  for (; r + 2 <= m->T; r += 2) {
    xrow_t xr[2] = { xrow_at(m, r), xrow_at(m, r + 1) };
    for (int i = 0; i < g; i++) vt45_x2(t + i * nb, xr, nb, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
  for (; r < m->T; r++) {
    xrow_t xr = xrow_at(m, r);
    for (int i = 0; i < g; i++) vt45_x1(t + i * nb, &xr, nb, m->out + r * rows + r0 + VT_ROWS * i, rows);
  }
}
