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

#ifndef KC
#define KC 256
#endif
#ifndef MC
#define MC 96
#endif
#ifndef NC
#define NC 256
#endif

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

// --- packing ---

/** n floats from src to dst; the sizes of full panels are constants, so the copy is inlined. */
static inline void copy_floats(float *dst, const float *src, int n) {
  switch (n) {
    case 32: memcpy(dst, src, 32 * sizeof(float)); break;
    case 16: memcpy(dst, src, 16 * sizeof(float)); break;
    case 8: memcpy(dst, src, 8 * sizeof(float)); break;
    case 6: memcpy(dst, src, 6 * sizeof(float)); break;
    case 4: memcpy(dst, src, 4 * sizeof(float)); break;
    default: for (int i = 0; i < n; i++) dst[i] = src[i];
  }
}

#if defined(__x86_64__) || defined(__i386__)
/** dst[i·ldd + r] = src[r·lds + i] for an 8 × 8 block (the classic unpack / shuffle / permute). */
TOY_AVX2 static void transpose8x8(const float *src, int64_t lds, float *dst, int64_t ldd) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) { t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]); t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44); u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44); u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}
#define HAVE_TRANSPOSE toy_has_avx2
#else
#define HAVE_TRANSPOSE 0
static void transpose8x8(const float *src, int64_t lds, float *dst, int64_t ldd) { (void)src; (void)lds; (void)dst; (void)ldd; }
#endif

/** Rows [i0, i0+m) of op(A), k in [k0, k0+kc), as ceil(m/mr) panels of kc × mr (zero-padded). */
static void pack_a(const toy_gemm_t *g, int64_t i0, int64_t m, int64_t k0, int64_t kc, int mr, float *dst) {
  const float *A = g->A;
  const int64_t lda = g->lda;
  if (g->transA) {
    // op(A) column k is a run of A's row k: each run is read once, in order, and dealt out to
    // the panels (a panel at a time would read every row once per panel, rows far apart).
    const int64_t panels = (m + mr - 1) / mr;
    for (int64_t k = 0; k < kc; k++) {
      const float *src = A + (k0 + k) * lda + i0;
      for (int64_t p = 0; p < panels; p++) {
        const int rows = (int)(m - p * mr < mr ? m - p * mr : mr);
        float *d = dst + p * kc * mr + k * mr;
        copy_floats(d, src + p * mr, rows);
        for (int r = rows; r < mr; r++) d[r] = 0;
      }
    }
    return;
  }
  for (int64_t p = 0; p < m; p += mr, dst += kc * mr) {
    const int rows = (int)(m - p < mr ? m - p : mr);
    if (g->transA) { // op(A) column k is a contiguous run of A's row k
      const float *src = A + k0 * lda + i0 + p;
      for (int64_t k = 0; k < kc; k++, src += lda) {
        float *d = dst + k * mr;
        copy_floats(d, src, rows);
        for (int r = rows; r < mr; r++) d[r] = 0;
      }
    } else {            // mr rows of A, read side by side
      const float *src[32];
      for (int r = 0; r < mr; r++) src[r] = r < rows ? A + (i0 + p + r) * lda + k0 : NULL;
      if (rows == mr) {
        int64_t k = 0;
        if (mr == 8 && HAVE_TRANSPOSE) for (; k + 8 <= kc; k += 8) transpose8x8(src[0] + k, lda, dst + k * 8, 8);
        for (; k < kc; k++) for (int r = 0; r < mr; r++) dst[k * mr + r] = src[r][k];
      } else {
        for (int64_t k = 0; k < kc; k++) for (int r = 0; r < mr; r++) dst[k * mr + r] = r < rows ? src[r][k] : 0;
      }
    }
  }
}

/** Columns [j0, j0+n) of op(B), k in [k0, k0+kc), as ceil(n/nr) panels of kc × nr (zero-padded). */
static void pack_b(const toy_gemm_t *g, int64_t j0, int64_t n, int64_t k0, int64_t kc, int nr, float *dst) {
  const float *B = g->B;
  const int64_t ldb = g->ldb;
  if (!g->transB) {
    // Row k of op(B) is a run of B's row k: read once, in order, dealt out to the panels.
    const int64_t panels = (n + nr - 1) / nr;
    for (int64_t k = 0; k < kc; k++) {
      const float *src = B + (k0 + k) * ldb + j0;
      for (int64_t p = 0; p < panels; p++) {
        const int cols = (int)(n - p * nr < nr ? n - p * nr : nr);
        float *d = dst + p * kc * nr + k * nr;
        copy_floats(d, src + p * nr, cols);
        for (int j = cols; j < nr; j++) d[j] = 0;
      }
    }
    return;
  }
  for (int64_t p = 0; p < n; p += nr, dst += kc * nr) {
    const int cols = (int)(n - p < nr ? n - p : nr);
    if (!g->transB) {
      const float *src = B + k0 * ldb + j0 + p;
      for (int64_t k = 0; k < kc; k++, src += ldb) {
        float *d = dst + k * nr;
        copy_floats(d, src, cols);
        for (int j = cols; j < nr; j++) d[j] = 0;
      }
    } else {            // nr rows of B (columns of op(B)), four at a time
      if (cols < nr) memset(dst, 0, (size_t)(kc * nr) * sizeof(float));
      int j = 0;
      if (HAVE_TRANSPOSE)
        for (; j + 8 <= cols; j += 8) {
          const float *s0 = B + (j0 + p + j) * ldb + k0;
          int64_t k = 0;
          for (; k + 8 <= kc; k += 8) transpose8x8(s0 + k, ldb, dst + k * nr + j, nr);
          for (; k < kc; k++) for (int q = 0; q < 8; q++) dst[k * nr + j + q] = s0[q * ldb + k];
        }
      for (; j + 4 <= cols; j += 4) {
        const float *s0 = B + (j0 + p + j) * ldb + k0, *s1 = s0 + ldb, *s2 = s1 + ldb, *s3 = s2 + ldb;
        for (int64_t k = 0; k < kc; k++) {
          float *d = dst + k * nr + j;
          d[0] = s0[k]; d[1] = s1[k]; d[2] = s2[k]; d[3] = s3[k];
        }
      }
      for (; j < cols; j++) {
        const float *s0 = B + (j0 + p + j) * ldb + k0;
        for (int64_t k = 0; k < kc; k++) dst[k * nr + j] = s0[k];
      }
    }
  }
}

// --- one block of C -------------------------------------------------------------------------

/** C[i0 : i0+m, j0 : j0+n] of the product (n ≤ NC, m any), with the caller's pack buffers: per k
 *  slice the B block is packed once and used by every MC-row tile of the block. */
static void gemm_block(const toy_gemm_t *g, micro_t mk, int64_t i0, int64_t m, int64_t j0, int64_t n, float *pa, float *pb) {
  float edge[32 * 32]; // a partial mr × nr block goes through here
  for (int64_t k0 = 0; k0 < g->K; k0 += KC) {
    const int64_t kc = g->K - k0 < KC ? g->K - k0 : KC;
    const int add = k0 > 0 || g->accumulate;
    pack_b(g, j0, n, k0, kc, mk.nr, pb);
    for (int64_t it = i0; it < i0 + m; it += MC) {
      const int64_t mt = i0 + m - it < MC ? i0 + m - it : MC;
      pack_a(g, it, mt, k0, kc, mk.mr, pa);
      for (int64_t jp = 0; jp < n; jp += mk.nr) {
        const int cols = (int)(n - jp < mk.nr ? n - jp : mk.nr);
        for (int64_t ip = 0; ip < mt; ip += mk.mr) {
          const int rows = (int)(mt - ip < mk.mr ? mt - ip : mk.mr);
          if (g->lower && j0 + jp > it + ip + rows - 1) continue; // every entry above the diagonal
          float *c = g->C + (it + ip) * g->ldc + j0 + jp;
          const float *a = pa + (ip / mk.mr) * kc * mk.mr, *b = pb + (jp / mk.nr) * kc * mk.nr;
          if (rows == mk.mr && cols == mk.nr) { mk.kernel(kc, a, b, c, g->ldc, add); continue; }
          for (int r = 0; r < rows; r++) for (int j = 0; j < cols; j++) edge[r * mk.nr + j] = add ? c[r * g->ldc + j] : 0;
          mk.kernel(kc, a, b, edge, mk.nr, 1);
          for (int r = 0; r < rows; r++) for (int j = 0; j < cols; j++) c[r * g->ldc + j] = edge[r * mk.nr + j];
        }
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
  for (int64_t j0 = 0; j0 < g->N; j0 += NC) gemm_block(g, mk, 0, g->M, j0, g->N - j0 < NC ? g->N - j0 : NC, pa, pb);
}

// --- threads: one chunk per block of C ------------------------------------------------------
// A chunk is `width` columns (at most NC) by `height` rows: C is cut into blocks of equal size
// (multiples of the micro-kernel's nr and mr), about four per thread and a multiple of the
// thread count, so the threads finish together (one thread: full columns). Every element of C is summed the same way
// whichever block it falls in (the same k slices, the same micro-kernel, edges included), so
// the cut never changes a value, only who computes it: the bits are the same for any thread count.

typedef struct { const toy_gemm_t *g; int64_t width, height, blocksN; } gemm_job_t;

static void gemm_chunk(void *ctx, int64_t chunk, int ith) {
  const gemm_job_t *job = ctx;
  const toy_gemm_t *g = job->g;
  const micro_t mk = micro();
  const int64_t i0 = (chunk / job->blocksN) * job->height, j0 = (chunk % job->blocksN) * job->width;
  float *pa = pool_scratch(ith, 2, pack_a_floats(mk.mr) * sizeof(float));
  float *pb = pool_scratch(ith, 3, pack_b_floats(mk.nr) * sizeof(float));
  gemm_block(g, mk, i0, g->M - i0 < job->height ? g->M - i0 : job->height, j0, g->N - j0 < job->width ? g->N - j0 : job->width, pa, pb);
}

static inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

void k_gemm(const toy_gemm_t *g) {
  if (g->M <= 0 || g->N <= 0) return;
  const micro_t mk = micro();
  const int64_t threads = pool_threads();
  const int64_t nb = (g->N + NC - 1) / NC, width = round_up((g->N + nb - 1) / nb, mk.nr);
  const int64_t blocksN = (g->N + width - 1) / width;
  // One thread: whole columns (each B block packed once per k slice); more: ~4 blocks per thread.
  int64_t rowsCut = threads == 1 ? 1 : (4 * threads + blocksN - 1) / blocksN;
  while ((rowsCut * blocksN) % threads) rowsCut++;
  int64_t height = round_up((g->M + rowsCut - 1) / rowsCut, mk.mr);
  if (height < mk.mr) height = mk.mr;
  const int64_t blocksM = (g->M + height - 1) / height;
  gemm_job_t job = { g, width, height, blocksN };
  pool_for(gemm_chunk, &job, blocksM * blocksN);
}
