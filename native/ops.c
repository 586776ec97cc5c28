// Norms, RoPE and elementwise kernels (bodies in ops_impl.h).
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

#define IMPL_HEADER "ops_impl.h"
#include "isa_variants.h"

// Elementwise ops split into fixed chunks when large (each element is computed once either way).
#define CHUNK 16384
typedef struct { const float *a, *b; float *o; int64_t n; int op; } ew_t;
enum { EW_SWIGLU, EW_GEGLU, EW_GELU, EW_ADD };

static void ew_range(const ew_t *e, int64_t i0, int64_t i1) {
  const int64_t n = i1 - i0;
  switch (e->op) {
    case EW_SWIGLU: PICK(swiglu)(e->a + i0, e->b + i0, e->o + i0, n); break;
    case EW_GEGLU: PICK(geglu)(e->a + i0, e->b + i0, e->o + i0, n); break;
    case EW_GELU: PICK(gelu)(e->a + i0, e->o + i0, n); break;
    case EW_ADD: PICK(add)(e->a + i0, e->b + i0, e->o + i0, n); break;
  }
}
static void ew_chunk(void *p, int64_t c, int ith) {
  (void)ith;
  const ew_t *e = p;
  ew_range(e, c * CHUNK, c * CHUNK + CHUNK < e->n ? c * CHUNK + CHUNK : e->n);
}
static void ew_run(const float *a, const float *b, float *o, int64_t n, int op) {
  ew_t e = { a, b, o, n, op };
  if (n <= 2 * CHUNK) { ew_range(&e, 0, n); return; }
  pool_for(ew_chunk, &e, (n + CHUNK - 1) / CHUNK);
}
void k_swiglu(const float *g, const float *u, float *o, int64_t n) { ew_run(g, u, o, n, EW_SWIGLU); }
void k_geglu(const float *g, const float *u, float *o, int64_t n) { ew_run(g, u, o, n, EW_GEGLU); }
void k_gelu(const float *x, float *o, int64_t n) { ew_run(x, NULL, o, n, EW_GELU); }
void k_add(const float *a, const float *b, float *o, int64_t n) { ew_run(a, b, o, n, EW_ADD); }

// Row-wise ops (norms, softmax) split by rows.
typedef struct { const float *x, *w, *b; float *o; float *xm; int64_t rows, n; float eps; int op; } rw_t;
enum { RW_RMS, RW_LN, RW_SOFTMAX };
static void rw_chunk(void *p, int64_t i, int ith) {
  (void)ith;
  const rw_t *r = p;
  {
    switch (r->op) {
      case RW_RMS: PICK(rms_norm_row)(r->x + i * r->n, r->w, r->n, r->eps, r->o + i * r->n); break;
      case RW_LN: PICK(layer_norm_row)(r->x + i * r->n, r->w, r->b, r->n, r->eps, r->o + i * r->n); break;
      case RW_SOFTMAX: PICK(softmax_row)(r->xm + i * r->n, r->n); break;
    }
  }
}
static void rw_run(rw_t *r) {
  if (r->rows * r->n < 32768) for (int64_t i = 0; i < r->rows; i++) rw_chunk(r, i, 0);
  else pool_for(rw_chunk, r, r->rows);
}
void k_rms_norm(const float *x, const float *w, int64_t rows, int64_t n, float eps, float *out) {
  rw_t r = { x, w, NULL, out, NULL, rows, n, eps, RW_RMS };
  rw_run(&r);
}
void k_layer_norm(const float *x, const float *w, const float *b, int64_t rows, int64_t n, float eps, float *out) {
  rw_t r = { x, w, b, out, NULL, rows, n, eps, RW_LN };
  rw_run(&r);
}
void k_softmax(float *x, int64_t rows, int64_t n) {
  rw_t r = { NULL, NULL, NULL, NULL, x, rows, n, 0, RW_SOFTMAX };
  rw_run(&r);
}

int64_t k_argmax(const float *x, int64_t n) { return n > 0 ? PICK(argmax)(x, n) : -1; }

void k_topk_heap(const float *x, int64_t n, int64_t k, int32_t *heap) { PICK(topk_heap)(x, n, k, heap); }

// RoPE. cos/sin are computed in double (angles reach thousands of radians) once per position
// and reused for every head; the table of the last single position is kept (decode calls rope
// for q and then k at the same position in every layer).
#define ROPE_MAX_HALF 1024
static struct { int valid; int32_t pos; int64_t half; float inv[ROPE_MAX_HALF]; float c[ROPE_MAX_HALF], s[ROPE_MAX_HALF]; } rope_cache;

static void rope_table(int32_t p, const float *invFreq, int64_t half, float *c, float *s) {
  for (int64_t i = 0; i < half; i++) {
    const double a = (double)p * (double)invFreq[i];
    c[i] = (float)cos(a);
    s[i] = (float)sin(a);
  }
}

// A batch of sequences repeats its positions (training: B sequences at 0..T−1, for q and k of
// every layer), so when there are fewer distinct positions than rows the tables are made once
// per position of [pmin, pmax] — the same values — and the last such table is kept for the
// next call with the same positions and frequencies.
static struct { float *c, *s; int32_t pmin, pmax; int64_t half; float inv[ROPE_MAX_HALF]; } rope_span;

/** The tables of positions [pmin, pmax] (row p − pmin), or NULL when out of memory. */
static int rope_span_tables(int32_t pmin, int32_t pmax, const float *invFreq, int64_t half) {
  if (rope_span.c && rope_span.pmin == pmin && rope_span.pmax == pmax && rope_span.half == half && !memcmp(rope_span.inv, invFreq, half * sizeof(float))) return 1;
  const int64_t n = ((int64_t)pmax - pmin + 1) * half;
  float *c = realloc(rope_span.c, (size_t)n * sizeof(float)), *s;
  if (!c) return 0;
  rope_span.c = c;
  s = realloc(rope_span.s, (size_t)n * sizeof(float));
  if (!s) { rope_span.half = -1; return 0; }
  rope_span.s = s;
  for (int32_t p = pmin; p <= pmax; p++) rope_table(p, invFreq, half, c + (p - pmin) * half, s + (p - pmin) * half);
  memcpy(rope_span.inv, invFreq, half * sizeof(float));
  rope_span.pmin = pmin; rope_span.pmax = pmax; rope_span.half = half;
  return 1;
}

/** Row t's heads rotated by the angles whose cos and sin are cc, ss. */
static inline void rope_row(float *x, int64_t t, int64_t nHeads, int64_t headDim, int64_t half, const float *cc, const float *ss, int neox) {
  for (int64_t h = 0; h < nHeads; h++) {
    float *o = x + (t * nHeads + h) * headDim;
    for (int64_t i = 0; i < half; i++) {
      const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
      const float x0 = o[a], x1 = o[b];
      o[a] = x0 * cc[i] - x1 * ss[i];
      o[b] = x0 * ss[i] + x1 * cc[i];
    }
  }
}

// Rows of a prompt on the pool, from the span's tables (each row computed as on one thread).
typedef struct { float *x; int64_t nHeads, headDim, half; const int32_t *pos; int32_t pmin; int neox; } rope_job_t;
static void rope_span_chunk(void *p, int64_t t, int ith) {
  (void)ith;
  const rope_job_t *j = p;
  const int64_t at = (int64_t)(j->pos[t] - j->pmin) * j->half;
  rope_row(j->x, t, j->nHeads, j->headDim, j->half, rope_span.c + at, rope_span.s + at, j->neox);
}

void k_rope(float *x, int64_t T, int64_t nHeads, int64_t headDim, int64_t ropeDims, const int32_t *pos, const float *invFreq, int neox) {
  const int64_t half = ropeDims / 2;
  if (half > ROPE_MAX_HALF) return; // checked by the caller
  float c[ROPE_MAX_HALF], s[ROPE_MAX_HALF];
  int32_t pmin = T > 0 ? pos[0] : 0, pmax = pmin;
  for (int64_t t = 1; t < T; t++) { if (pos[t] < pmin) pmin = pos[t]; if (pos[t] > pmax) pmax = pos[t]; }
  // A prompt's positions are one span (pmax − pmin + 1 = T): its tables serve q and k of every
  // layer, instead of T·half cos and sin per call.
  const int span = T > 1 && (int64_t)pmax - pmin + 1 <= T && rope_span_tables(pmin, pmax, invFreq, half);
  if (span) {
    rope_job_t j = { x, nHeads, headDim, half, pos, pmin, neox };
    if (T * nHeads * half < 16384) for (int64_t t = 0; t < T; t++) rope_span_chunk(&j, t, 0);
    else pool_for(rope_span_chunk, &j, T);
    return;
  }
  for (int64_t t = 0; t < T; t++) {
    const float *cc = c, *ss = s;
    if (rope_cache.valid && rope_cache.pos == pos[t] && rope_cache.half == half && !memcmp(rope_cache.inv, invFreq, half * sizeof(float))) {
      cc = rope_cache.c; ss = rope_cache.s;
    } else if (T == 1) {
      rope_table(pos[t], invFreq, half, rope_cache.c, rope_cache.s);
      memcpy(rope_cache.inv, invFreq, half * sizeof(float));
      rope_cache.pos = pos[t]; rope_cache.half = half; rope_cache.valid = 1;
      cc = rope_cache.c; ss = rope_cache.s;
    } else {
      rope_table(pos[t], invFreq, half, c, s);
    }
    rope_row(x, t, nHeads, headDim, half, cc, ss, neox);
  }
}

