// The O(tokens · d) ops of training on the native backend: the backwards of gated activations,
// RMSNorm and RoPE, the cross-entropy over the vocabulary, AdamW, the gradient norm, gradient
// sums. (Their forwards, where the inference kernels already compute them, are those kernels.)
//
// Work is cut into fixed chunks (ROWS rows or ELEMS elements) whatever the thread count; a sum
// over rows keeps one partial per chunk and adds the partials up in chunk order, so the bits are
// the same for 1 or n threads. Bodies in train_ops_impl.h, compiled portable and AVX2.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif
#include "toy.h"

#define ROWS 16
#define ELEMS 16384
#define ROPE_MAX_HALF 1024
#define GELU_K 0.7978845608028654f // √(2/π)
enum { ACT_SILU = 0, ACT_GELU = 1 };

/** act(x) and act'(x), in float (the scalar path and the vector tails). */
static inline void act_and_grad(int act, float x, float *a, float *da) {
  if (act == ACT_SILU) {
    const float s = 1.0f / (1.0f + expf(-x));
    *a = x * s;
    *da = s * (1.0f + x * (1.0f - s));
  } else {
    const float t = tanhf(GELU_K * (x + 0.044715f * x * x * x));
    *a = 0.5f * x * (1.0f + t);
    *da = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3 * 0.044715f * x * x);
  }
}

#define IMPL_HEADER "train_ops_impl.h"
#include "isa_variants.h"

/** Runs fn on every chunk: on the pool when there is enough work, else here (same results). */
static void run_chunks(toy_chunk_fn fn, void *ctx, int64_t nchunks, int64_t work) {
  if (work < 65536) for (int64_t c = 0; c < nchunks; c++) fn(ctx, c, 0);
  else pool_for(fn, ctx, nchunks);
}
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/** dst[i] += Σ_c part[c·n + i], chunks in order. */
static void add_partials(float *dst, const double *part, int64_t nchunks, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t c = 0; c < nchunks; c++) s += part[c * n + i];
    dst[i] = (float)(dst[i] + s);
  }
}

// --- gated activations ---

typedef struct { int act; const float *g, *u, *dy; float *dg, *du; int64_t n; } gated_t;
static void gated_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const gated_t *a = p;
  const int64_t i0 = c * ELEMS, n = min64(ELEMS, a->n - i0);
  PICK(gated_backward)(a->act, a->g + i0, a->u + i0, a->dy + i0, a->dg ? a->dg + i0 : NULL, a->du ? a->du + i0 : NULL, n);
}
void k_gated_backward(int act, const float *gate, const float *up, const float *dy, float *dgate, float *dup, int64_t n) {
  gated_t a = { act, gate, up, dy, dgate, dup, n };
  run_chunks(gated_chunk, &a, (n + ELEMS - 1) / ELEMS, n);
}

// --- RMSNorm ---

typedef struct { const float *dy, *x, *g; int64_t rows, n; float eps; float *dx; double *part; } rms_t;
static void rms_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const rms_t *a = p;
  PICK(rms_norm_backward)(a->dy, a->x, a->g, c * ROWS, min64(c * ROWS + ROWS, a->rows), a->n, a->eps, a->dx, a->part ? a->part + c * a->n : NULL);
}
int k_rms_norm_backward(const float *dy, const float *x, const float *g, int64_t rows, int64_t n, float eps, float *dx, float *dg) {
  const int64_t nchunks = (rows + ROWS - 1) / ROWS;
  double *part = dg ? calloc((size_t)(nchunks * n), sizeof(double)) : NULL;
  if (dg && !part) return 0;
  rms_t a = { dy, x, g, rows, n, eps, dx, part };
  run_chunks(rms_chunk, &a, nchunks, rows * n);
  if (dg) add_partials(dg, part, nchunks, n);
  free(part);
  return 1;
}

// --- RoPE ---

typedef struct { const float *dy, *y; int64_t N, heads, headDim, dims; const int32_t *pos; const float *invFreq; int neox; float *dx; double *part;
                 const double *tc, *ts; int32_t pmin; } rope_t;
static void rope_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const rope_t *a = p;
  PICK(rope_backward)(a->dy, a->y, c * ROWS, min64(c * ROWS + ROWS, a->N), a->heads, a->headDim, a->dims, a->pos, a->invFreq, a->neox,
                      a->dx, a->part ? a->part + c * (a->dims / 2) : NULL, a->tc, a->ts, a->pmin);
}
int k_rope_backward(const float *dy, const float *y, int64_t N, int64_t heads, int64_t headDim, int64_t dims, const int32_t *pos,
                    const float *invFreq, int neox, float *dx, float *dinv) {
  if (dims / 2 > ROPE_MAX_HALF) return 0;
  const int64_t nchunks = (N + ROWS - 1) / ROWS;
  double *part = dinv ? calloc((size_t)(nchunks * (dims / 2)), sizeof(double)) : NULL;
  if (dinv && !part) return 0;
  // Fewer distinct positions than rows (a batch of sequences): cos and sin once per position.
  const int64_t half = dims / 2;
  int32_t pmin = N > 0 ? pos[0] : 0, pmax = pmin;
  for (int64_t t = 1; t < N; t++) { if (pos[t] < pmin) pmin = pos[t]; if (pos[t] > pmax) pmax = pos[t]; }
  double *table = (int64_t)pmax - pmin + 1 < N ? malloc((size_t)(2 * ((int64_t)pmax - pmin + 1) * half) * sizeof(double)) : NULL;
  const int64_t span = ((int64_t)pmax - pmin + 1) * half;
  if (table)
    for (int64_t p = pmin; p <= pmax; p++)
      for (int64_t i = 0; i < half; i++) {
        const double ang = (double)p * invFreq[i];
        table[(p - pmin) * half + i] = cos(ang);
        table[span + (p - pmin) * half + i] = sin(ang);
      }
  rope_t a = { dy, y, N, heads, headDim, dims, pos, invFreq, neox, dx, part, table, table ? table + span : NULL, pmin };
  run_chunks(rope_chunk, &a, nchunks, N * heads * headDim);
  if (dinv) add_partials(dinv, part, nchunks, dims / 2);
  free(part);
  free(table);
  return 1;
}

// --- cross-entropy ---

typedef struct { const float *z; const int32_t *target; int64_t N, V; int32_t ignore; double *lse; double *part; float g; float *dz; } ce_t;
static void ce_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const ce_t *a = p;
  a->part[c] = PICK(cross_entropy)(a->z, a->target, c * ROWS, min64(c * ROWS + ROWS, a->N), a->V, a->ignore, a->lse);
}
double k_cross_entropy(const float *z, const int32_t *target, int64_t N, int64_t V, int32_t ignore, double *lse) {
  const int64_t nchunks = (N + ROWS - 1) / ROWS;
  double *part = calloc((size_t)(nchunks > 0 ? nchunks : 1), sizeof(double));
  if (!part) return NAN;
  ce_t a = { z, target, N, V, ignore, lse, part, 0, NULL };
  run_chunks(ce_chunk, &a, nchunks, N * V);
  double total = 0;
  for (int64_t c = 0; c < nchunks; c++) total += part[c];
  free(part);
  return total;
}
static void ce_backward_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const ce_t *a = p;
  PICK(cross_entropy_backward)(a->z, a->target, a->lse, c * ROWS, min64(c * ROWS + ROWS, a->N), a->V, a->ignore, a->g, a->dz);
}
void k_cross_entropy_backward(const float *z, const int32_t *target, const double *lse, int64_t N, int64_t V, int32_t ignore, float g, float *dz) {
  ce_t a = { z, target, N, V, ignore, (double *)lse, NULL, g, dz };
  run_chunks(ce_backward_chunk, &a, (N + ROWS - 1) / ROWS, N * V);
}

// --- elementwise: AdamW, squared norm, scaling, sums ---

typedef struct { float *x; const float *y; float *m, *v; int64_t n; const toy_adamw_t *h; double s; double *part; int op; } ew_t;
enum { EW_ADAMW, EW_SUMSQ, EW_SCALE, EW_ACC };
static void ew_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const ew_t *a = p;
  const int64_t i0 = c * ELEMS, i1 = min64(i0 + ELEMS, a->n);
  switch (a->op) {
    case EW_ADAMW: PICK(adamw)(a->x, a->y, a->m, a->v, i0, i1, a->h); break;
    case EW_SUMSQ: a->part[c] = PICK(sum_squares)(a->y, i0, i1); break;
    case EW_SCALE: PICK(scale)(a->x, i0, i1, a->s); break;
    case EW_ACC: PICK(accumulate)(a->x, a->y, i0, i1); break;
  }
}
static void ew_run(ew_t *a) { run_chunks(ew_chunk, a, (a->n + ELEMS - 1) / ELEMS, a->n); }

void k_adamw(float *theta, const float *g, float *m, float *v, int64_t n, const toy_adamw_t *h) {
  ew_t a = { theta, g, m, v, n, h, 0, NULL, EW_ADAMW };
  ew_run(&a);
}
double k_sum_squares(const float *x, int64_t n) {
  const int64_t nchunks = (n + ELEMS - 1) / ELEMS;
  double *part = calloc((size_t)(nchunks > 0 ? nchunks : 1), sizeof(double));
  if (!part) return NAN;
  ew_t a = { NULL, x, NULL, NULL, n, NULL, 0, part, EW_SUMSQ };
  ew_run(&a);
  double s = 0;
  for (int64_t c = 0; c < nchunks; c++) s += part[c];
  free(part);
  return s;
}
void k_scale(float *x, int64_t n, double s) {
  ew_t a = { x, NULL, NULL, NULL, n, NULL, s, NULL, EW_SCALE };
  ew_run(&a);
}
void k_accumulate(float *dst, const float *src, int64_t n) {
  ew_t a = { dst, src, NULL, NULL, n, NULL, 0, NULL, EW_ACC };
  ew_run(&a);
}
