// Float32 matrix multiply for training: C (+)= op(A) · op(B), with op = identity or transpose,
// so the three products of a linear layer need no copies:
//   forward  y  = x Wᵀ    (A = x,      B = Wᵀ: transB)
//   input    dx = dy W    (A = dy,     B = W)
//   weight   dW = dyᵀ x   (A = dyᵀ: transA, B = x)
//
// The classic blocked layout (Goto/BLIS): C is cut into MC × NC tiles, the k axis into KC
// slices; for each slice the tile's rows of A are packed into MR-row panels and its columns of
// B into NR-column panels (zero-padded), and a register-blocked micro-kernel multiplies one
// panel pair with MR × NR accumulators held in vector registers.
//
// Determinism: a tile is computed by exactly one thread, and every element of C sums its k
// slices in the same order with the same micro-kernel whatever the thread count, so results are
// bit-identical for 1 or n threads (they may differ between instruction sets).
#include <string.h>
#include "toy.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define KC 256
#define MC 96
#define NC 256

typedef struct {
  int mr, nr;
  /** c[r·ldc + j] (+)= Σ_k a[k·mr + r] · b[k·nr + j] for r < mr, j < nr; `add`: keep c's values. */
  void (*kernel)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int add);
} micro_t;

// --- micro-kernels ------------------------------------------------------------------------

static void kernel_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int add) {
  enum { MR = 4, NR = 16 };
  float acc[MR][NR] = { { 0 } };
  for (int64_t k = 0; k < kc; k++)
    for (int r = 0; r < MR; r++)
      for (int j = 0; j < NR; j++) acc[r][j] += a[k * MR + r] * b[k * NR + j];
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++) c[r * ldc + j] = add ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

#if defined(__x86_64__) || defined(__i386__)
// 6 × 16: twelve 8-wide accumulators.
TOY_AVX2 static void kernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int add) {
  __m256 acc[6][2];
  for (int r = 0; r < 6; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; k++, a += 6, b += 16) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    for (int r = 0; r < 6; r++) {
      const __m256 ar = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < 6; r++) {
    float *cr = c + r * ldc;
    if (add) { acc[r][0] = _mm256_add_ps(_mm256_loadu_ps(cr), acc[r][0]); acc[r][1] = _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[r][1]); }
    _mm256_storeu_ps(cr, acc[r][0]);
    _mm256_storeu_ps(cr + 8, acc[r][1]);
  }
}

// 8 × 32: sixteen 16-wide accumulators.
__attribute__((target("avx512f")))
static void kernel_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int add) {
  __m512 acc[8][2];
  for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; k++, a += 8, b += 32) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    for (int r = 0; r < 8; r++) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < 8; r++) {
    float *cr = c + r * ldc;
    if (add) { acc[r][0] = _mm512_add_ps(_mm512_loadu_ps(cr), acc[r][0]); acc[r][1] = _mm512_add_ps(_mm512_loadu_ps(cr + 16), acc[r][1]); }
    _mm512_storeu_ps(cr, acc[r][0]);
    _mm512_storeu_ps(cr + 16, acc[r][1]);
  }
}
#endif

static micro_t micro(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (toy_has_avx512) return (micro_t){ 8, 32, kernel_avx512 };
  if (toy_has_avx2) return (micro_t){ 6, 16, kernel_avx2 };
#endif
  return (micro_t){ 4, 16, kernel_generic };
}

// --- packing -------------------------------------------------------------------------------

/** Rows [i0, i0+m) of op(A), k in [k0, k0+kc), as ceil(m/mr) panels of kc × mr (zero-padded). */
static void pack_a(const toy_gemm_t *g, int64_t i0, int64_t m, int64_t k0, int64_t kc, int mr, float *dst) {
  for (int64_t p = 0; p < m; p += mr, dst += kc * mr) {
    const int rows = (int)(m - p < mr ? m - p : mr);
    for (int64_t k = 0; k < kc; k++) {
      float *d = dst + k * mr;
      for (int r = 0; r < rows; r++) {
        const int64_t i = i0 + p + r, kk = k0 + k;
        d[r] = g->transA ? g->A[kk * g->lda + i] : g->A[i * g->lda + kk];
      }
      for (int r = rows; r < mr; r++) d[r] = 0;
    }
  }
}

/** Columns [j0, j0+n) of op(B), k in [k0, k0+kc), as ceil(n/nr) panels of kc × nr (zero-padded). */
static void pack_b(const toy_gemm_t *g, int64_t j0, int64_t n, int64_t k0, int64_t kc, int nr, float *dst) {
  for (int64_t p = 0; p < n; p += nr, dst += kc * nr) {
    const int cols = (int)(n - p < nr ? n - p : nr);
    if (!g->transB) {
      for (int64_t k = 0; k < kc; k++) {
        const float *s = g->B + (k0 + k) * g->ldb + j0 + p;
        float *d = dst + k * nr;
        memcpy(d, s, (size_t)cols * sizeof(float));
        for (int j = cols; j < nr; j++) d[j] = 0;
      }
    } else {
      if (cols < nr) memset(dst, 0, (size_t)(kc * nr) * sizeof(float));
      for (int j = 0; j < cols; j++) {
        const float *s = g->B + (j0 + p + j) * g->ldb + k0;
        for (int64_t k = 0; k < kc; k++) dst[k * nr + j] = s[k];
      }
    }
  }
}

// --- one tile ------------------------------------------------------------------------------

/** C[i0 : i0+m, j0 : j0+n] of the product, with the caller's pack buffers. */
static void gemm_tile(const toy_gemm_t *g, micro_t mk, int64_t i0, int64_t m, int64_t j0, int64_t n, float *pa, float *pb) {
  float edge[32 * 32]; // a partial mr × nr block goes through here
  for (int64_t k0 = 0; k0 < g->K; k0 += KC) {
    const int64_t kc = g->K - k0 < KC ? g->K - k0 : KC;
    const int add = k0 > 0 || g->accumulate;
    pack_a(g, i0, m, k0, kc, mk.mr, pa);
    pack_b(g, j0, n, k0, kc, mk.nr, pb);
    for (int64_t jp = 0; jp < n; jp += mk.nr) {
      const int cols = (int)(n - jp < mk.nr ? n - jp : mk.nr);
      for (int64_t ip = 0; ip < m; ip += mk.mr) {
        const int rows = (int)(m - ip < mk.mr ? m - ip : mk.mr);
        float *c = g->C + (i0 + ip) * g->ldc + j0 + jp;
        const float *a = pa + (ip / mk.mr) * kc * mk.mr, *b = pb + (jp / mk.nr) * kc * mk.nr;
        if (rows == mk.mr && cols == mk.nr) { mk.kernel(kc, a, b, c, g->ldc, add); continue; }
        for (int r = 0; r < rows; r++) for (int j = 0; j < cols; j++) edge[r * mk.nr + j] = add ? c[r * g->ldc + j] : 0;
        mk.kernel(kc, a, b, edge, mk.nr, 1);
        for (int r = 0; r < rows; r++) for (int j = 0; j < cols; j++) c[r * g->ldc + j] = edge[r * mk.nr + j];
      }
    }
  }
  if (g->K == 0 && !g->accumulate)
    for (int64_t r = 0; r < m; r++) memset(g->C + (i0 + r) * g->ldc + j0, 0, (size_t)n * sizeof(float));
}

static size_t pack_a_floats(int mr) { return (size_t)((MC + mr - 1) / mr * mr) * KC; }
static size_t pack_b_floats(int nr) { return (size_t)((NC + nr - 1) / nr * nr) * KC; }

void gemm_serial(const toy_gemm_t *g, int ith) {
  const micro_t mk = micro();
  float *pa = pool_scratch(ith, 2, pack_a_floats(mk.mr) * sizeof(float));
  float *pb = pool_scratch(ith, 3, pack_b_floats(mk.nr) * sizeof(float));
  for (int64_t i0 = 0; i0 < g->M; i0 += MC)
    for (int64_t j0 = 0; j0 < g->N; j0 += NC)
      gemm_tile(g, mk, i0, g->M - i0 < MC ? g->M - i0 : MC, j0, g->N - j0 < NC ? g->N - j0 : NC, pa, pb);
}

// --- threads: one chunk per tile -----------------------------------------------------------

static void gemm_chunk(void *ctx, int64_t chunk, int ith) {
  const toy_gemm_t *g = ctx;
  const micro_t mk = micro();
  const int64_t tilesN = (g->N + NC - 1) / NC;
  const int64_t i0 = (chunk / tilesN) * MC, j0 = (chunk % tilesN) * NC;
  float *pa = pool_scratch(ith, 2, pack_a_floats(mk.mr) * sizeof(float));
  float *pb = pool_scratch(ith, 3, pack_b_floats(mk.nr) * sizeof(float));
  gemm_tile(g, mk, i0, g->M - i0 < MC ? g->M - i0 : MC, j0, g->N - j0 < NC ? g->N - j0 : NC, pa, pb);
}

void k_gemm(const toy_gemm_t *g) {
  if (g->M <= 0 || g->N <= 0) return;
  pool_for(gemm_chunk, (void *)g, ((g->M + MC - 1) / MC) * ((g->N + NC - 1) / NC));
}
