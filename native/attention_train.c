// Attention for training: the forward keeps the softmax P of every (sequence, head), and the
// backward turns ∂out into ∂q, ∂k, ∂v. Per head, with S = scale · Q Kᵀ (soft-capped), P = softmax
// over the keys a query may see (causal and/or sliding window), out = P V:
//   ∂V = Pᵀ ∂out,  ∂P = ∂out Vᵀ,  ∂S = P ⊙ (∂P − rowsum(P ⊙ ∂P)),
//   ∂raw = ∂S ⊙ (1 − tanh²) · scale,  ∂Q = ∂raw K,  ∂K = ∂rawᵀ Q.
// Every product is a GEMM on the calling thread (gemm_serial). Under a causal mask the work
// above the diagonal is skipped, about half of it at long T: the T × T products (S, ∂P) skip the
// register blocks wholly above it, the others are cut into blocks of QB queries (∂K, ∂V: keys)
// that stop at the diagonal block. Masked entries of P and ∂S are exact zeros, so the parts of
// the diagonal blocks they fill add nothing. The forward runs one (sequence, head) per chunk; the backward one
// (sequence, KV head) per chunk, its query heads in order, so each ∂k, ∂v row has one writer
// and a fixed summation order: the same bits for any thread count.
#include <math.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include "toy.h"

typedef struct {
  const toy_attn_shape_t *s;
  const float *q, *k, *v, *probs, *dout;
  float *out, *probsOut, *dq, *dk, *dv;
} attn_ctx_t;

static inline int64_t first_key(const toy_attn_shape_t *s, int64_t t) { return s->window > 0 && t - s->window + 1 > 0 ? t - s->window + 1 : 0; }
static inline int64_t last_key(const toy_attn_shape_t *s, int64_t t) { return s->causal ? t : s->T - 1; }

/** Query blocks of QB rows: block [i0, i1) sees keys [key_start, key_end) only (causal: none
 *  past i1; window: none before the first query's window), so a causal product skips the
 *  blocks above the diagonal. */
#define QB 64
static inline int64_t key_start(const toy_attn_shape_t *s, int64_t i0) { return first_key(s, i0); }
static inline int64_t key_end(const toy_attn_shape_t *s, int64_t i1) { return s->causal ? i1 : s->T; }

/** S = Q_h K_hᵀ (T × T) for sequence b, head h; causal: only the entries on and below the diagonal. */
static void scores(const toy_attn_shape_t *s, const float *q, const float *k, int64_t b, int64_t h, float *S, int ith) {
  const int64_t T = s->T, D = s->D, kvh = h / (s->H / s->KV);
  const toy_gemm_t g = { T, T, D, q + b * T * s->H * D + h * D, s->H * D, 0, k + b * T * s->KV * D + kvh * D, s->KV * D, 1, S, T, 0, s->causal };
  gemm_serial(&g, ith);
}

/** row[j0..j1] ← softmax of the scaled (soft-capped) scores; every other entry ← 0. The
 *  exponentials 8 at a time where AVX2 is (vexp: ~1 ulp), in expf elsewhere. */
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "vmath_avx2.h"
/** x[i] ← x[i] · scale for i < n rounded down to 8; returns that count, and the max so far in *max
 *  (the same products as the scalar loop; the max of floats does not depend on the order). */
static int64_t scale_max_avx2(float *x, int64_t n, float scale, float *max) {
  const __m256 sv = _mm256_set1_ps(scale);
  __m256 mv = _mm256_set1_ps(*max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), sv);
    _mm256_storeu_ps(x + i, v);
    mv = _mm256_max_ps(mv, v);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, mv);
  for (int l = 0; l < 8; l++) if (lanes[l] > *max) *max = lanes[l];
  return i;
}
/** x[i] ← x[i] · inv for i < n rounded down to 8; returns that count. */
static int64_t scale_avx2(float *x, int64_t n, float inv) {
  const __m256 iv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), iv));
  return i;
}
static int64_t exp_sum_avx2(float *x, int64_t n, float max, double *sum) {
  int64_t i;
  const __m256 acc = vexp_shifted_sum(x, x, n, max, &i);
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  for (int l = 0; l < 8; l++) *sum += lanes[l];
  return i;
}
#pragma GCC pop_options
#endif

static void softmax_row(const toy_attn_shape_t *s, float *row, int64_t j0, int64_t j1) {
  float max = -INFINITY;
  int64_t j = j0;
#if defined(__x86_64__) || defined(__i386__)
  if (toy_has_avx2 && !(s->softcap > 0)) j += scale_max_avx2(row + j0, j1 + 1 - j0, s->scale, &max);
#endif
  for (; j <= j1; j++) {
    float x = row[j] * s->scale;
    if (s->softcap > 0) x = s->softcap * tanhf(x / s->softcap);
    row[j] = x;
    if (x > max) max = x;
  }
  double sum = 0;
  j = j0;
#if defined(__x86_64__) || defined(__i386__)
  if (toy_has_avx2) j += exp_sum_avx2(row + j0, j1 + 1 - j0, max, &sum);
#endif
  for (; j <= j1; j++) sum += row[j] = expf(row[j] - max);
  const float inv = (float)(1.0 / sum);
  memset(row, 0, (size_t)j0 * sizeof(float));
  j = j0;
#if defined(__x86_64__) || defined(__i386__)
  if (toy_has_avx2) j += scale_avx2(row + j0, j1 + 1 - j0, inv);
#endif
  for (; j <= j1; j++) row[j] *= inv;
  memset(row + j1 + 1, 0, (size_t)(s->T - 1 - j1) * sizeof(float));
}

static void forward_chunk(void *ctx, int64_t chunk, int ith) {
  const attn_ctx_t *a = ctx;
  const toy_attn_shape_t *s = a->s;
  const int64_t T = s->T, D = s->D, H = s->H, b = chunk / H, h = chunk % H, kvh = h / (H / s->KV);
  float *P = a->probsOut + chunk * T * T;
  scores(s, a->q, a->k, b, h, P, ith);
  for (int64_t i0 = 0; i0 < T; i0 += QB) {
    const int64_t i1 = i0 + QB < T ? i0 + QB : T, k0 = key_start(s, i0), k1 = key_end(s, i1);
    for (int64_t t = i0; t < i1; t++) softmax_row(s, P + t * T, first_key(s, t), last_key(s, t));
    const toy_gemm_t o = { i1 - i0, D, k1 - k0, P + i0 * T + k0, T, 0, a->v + (b * T + k0) * s->KV * D + kvh * D, s->KV * D, 0,
                           a->out + (b * T + i0) * H * D + h * D, H * D, 0 };
    gemm_serial(&o, ith);
  }
}

void k_attention_train(const toy_attn_shape_t *s, const float *q, const float *k, const float *v, float *out, float *probs) {
  attn_ctx_t a = { .s = s, .q = q, .k = k, .v = v, .out = out, .probsOut = probs };
  pool_for(forward_chunk, &a, s->B * s->H);
}

static void backward_chunk(void *ctx, int64_t chunk, int ith) {
  const attn_ctx_t *a = ctx;
  const toy_attn_shape_t *s = a->s;
  const int64_t T = s->T, D = s->D, H = s->H, KV = s->KV, group = H / KV, b = chunk / KV, kvh = chunk % KV;
  float *dS = pool_scratch(ith, 0, (size_t)(T * T) * sizeof(float));
  float *raw = s->softcap > 0 ? pool_scratch(ith, 1, (size_t)(T * T) * sizeof(float)) : NULL;
  const float *K = a->k + b * T * KV * D + kvh * D, *V = a->v + b * T * KV * D + kvh * D;
  float *dK = a->dk + b * T * KV * D + kvh * D, *dV = a->dv + b * T * KV * D + kvh * D;
  for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
    const float *P = a->probs + (b * H + h) * T * T;
    const float *Q = a->q + b * T * H * D + h * D, *dO = a->dout + b * T * H * D + h * D;
    float *dQ = a->dq + b * T * H * D + h * D;
    const toy_gemm_t dp = { T, T, D, dO, H * D, 0, V, KV * D, 1, dS, T, 0, s->causal }; // ∂P = ∂out Vᵀ
    gemm_serial(&dp, ith);
    if (raw) scores(s, a->q, a->k, b, h, raw, ith);
    for (int64_t t = 0; t < T; t++) {
      const float *p = P + t * T;
      float *d = dS + t * T;
      const int64_t j0 = first_key(s, t), j1 = last_key(s, t);
      double dot = 0;
      for (int64_t j = j0; j <= j1; j++) dot += (double)p[j] * d[j];
      const float sum = (float)dot;
      for (int64_t j = j0; j <= j1; j++) {
        float g = p[j] * (d[j] - sum);
        if (raw) {
          const float th = tanhf(raw[t * T + j] * s->scale / s->softcap);
          g *= 1 - th * th;
        }
        d[j] = g * s->scale;
      }
      // Keys the query does not see: exact zeros (the products above may have left them unwritten).
      memset(d, 0, (size_t)j0 * sizeof(float));
      memset(d + j1 + 1, 0, (size_t)(T - 1 - j1) * sizeof(float));
    }
    for (int64_t i0 = 0; i0 < T; i0 += QB) {
      const int64_t i1 = i0 + QB < T ? i0 + QB : T, k0 = key_start(s, i0), k1 = key_end(s, i1);
      const toy_gemm_t gq = { i1 - i0, D, k1 - k0, dS + i0 * T + k0, T, 0, K + k0 * KV * D, KV * D, 0, dQ + i0 * H * D, H * D, 1 }; // ∂Q += ∂raw K
      gemm_serial(&gq, ith);
    }
    // Key blocks: keys [j0, j1) are seen by queries from j0 on (causal) or by all.
    for (int64_t j0 = 0; j0 < T; j0 += QB) {
      const int64_t j1 = j0 + QB < T ? j0 + QB : T, q0 = s->causal ? j0 : 0;
      const toy_gemm_t gk = { j1 - j0, D, T - q0, dS + q0 * T + j0, T, 1, Q + q0 * H * D, H * D, 0, dK + j0 * KV * D, KV * D, 1 }; // ∂K += ∂rawᵀ Q
      const toy_gemm_t gv = { j1 - j0, D, T - q0, P + q0 * T + j0, T, 1, dO + q0 * H * D, H * D, 0, dV + j0 * KV * D, KV * D, 1 };  // ∂V += Pᵀ ∂out
      gemm_serial(&gk, ith);
      gemm_serial(&gv, ith);
    }
  }
}

void k_attention_train_backward(const toy_attn_shape_t *s, const float *q, const float *k, const float *v, const float *probs,
                                const float *dout, float *dq, float *dk, float *dv) {
  attn_ctx_t a = { .s = s, .q = q, .k = k, .v = v, .probs = probs, .dout = dout, .dq = dq, .dk = dk, .dv = dv };
  pool_for(backward_chunk, &a, s->B * s->KV);
}
