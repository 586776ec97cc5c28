// Norms, RoPE and elementwise kernels, compiled twice by ops.c (portable / AVX2).

#if IMPL_AVX2
#include "vmath_avx2.h"
#endif

static inline float NAME(silu1)(float x) { return x / (1.0f + expf(-x)); }
static inline float NAME(gelu1)(float x) {
  const float y = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(y));
}

static void NAME(swiglu)(const float *g, const float *u, float *o, int64_t n) {
  int64_t i = 0;
#if IMPL_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(vsilu(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i)));
  if (i < n) { // the tail through the same vector formula: a value's bits must not depend on where it sits
    float gt[8] = {0}, ut[8] = {0}, ot[8];
    memcpy(gt, g + i, (size_t)(n - i) * 4); memcpy(ut, u + i, (size_t)(n - i) * 4);
    _mm256_storeu_ps(ot, _mm256_mul_ps(vsilu(_mm256_loadu_ps(gt)), _mm256_loadu_ps(ut)));
    memcpy(o + i, ot, (size_t)(n - i) * 4); i = n;
  }
#endif
  for (; i < n; i++) o[i] = NAME(silu1)(g[i]) * u[i];
}
static void NAME(geglu)(const float *g, const float *u, float *o, int64_t n) {
  int64_t i = 0;
#if IMPL_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(vgelu(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i)));
  if (i < n) { // the tail through the same vector formula (see swiglu)
    float gt[8] = {0}, ut[8] = {0}, ot[8];
    memcpy(gt, g + i, (size_t)(n - i) * 4); memcpy(ut, u + i, (size_t)(n - i) * 4);
    _mm256_storeu_ps(ot, _mm256_mul_ps(vgelu(_mm256_loadu_ps(gt)), _mm256_loadu_ps(ut)));
    memcpy(o + i, ot, (size_t)(n - i) * 4); i = n;
  }
#endif
  for (; i < n; i++) o[i] = NAME(gelu1)(g[i]) * u[i];
}
static void NAME(gelu)(const float *x, float *o, int64_t n) {
  int64_t i = 0;
#if IMPL_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, vgelu(_mm256_loadu_ps(x + i)));
  if (i < n) { // the tail through the same vector formula (see swiglu)
    float xt[8] = {0}, ot[8];
    memcpy(xt, x + i, (size_t)(n - i) * 4);
    _mm256_storeu_ps(ot, vgelu(_mm256_loadu_ps(xt)));
    memcpy(o + i, ot, (size_t)(n - i) * 4); i = n;
  }
#endif
  for (; i < n; i++) o[i] = NAME(gelu1)(x[i]);
}
static void NAME(add)(const float *a, const float *b, float *o, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}

// The index of the first largest entry, as the scalar loop `if (x[i] > x[best]) best = i` finds
// it: NaN entries never win, and a NaN x[0] stays the answer. Two passes: the largest value m
// (x[0] when it is NaN), then the first i with x[i] == m (−0 == +0, as the loop's ">" treats them).
static int64_t NAME(argmax)(const float *x, int64_t n) {
  float m = x[0];
  if (m != m) return 0;
  int64_t i = 1;
#if IMPL_AVX2
  __m256 vm = _mm256_set1_ps(m);
  for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(_mm256_loadu_ps(x + i), vm); // a NaN lane of x keeps vm's
  float lanes[8];
  _mm256_storeu_ps(lanes, vm);
  for (int l = 0; l < 8; l++) if (lanes[l] > m) m = lanes[l];
#endif
  for (; i < n; i++) if (x[i] > m) m = x[i];
  i = 0;
#if IMPL_AVX2
  const __m256 target = _mm256_set1_ps(m);
  for (; i + 8 <= n; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), target, _CMP_EQ_OQ));
    if (hit) return i + __builtin_ctz((unsigned)hit);
  }
#endif
  for (; i < n; i++) if (x[i] == m) return i;
  return 0; // not reached: m is one of the entries
}

// topIds' heap phase (src/engines/sampling.ts), operation for operation: a min-heap of the k best
// entries seen (better: larger, ties to the smaller index), started from the first k entries and
// heapified, then one comparison per later entry against the root's value. The same comparisons
// in the same order give the same heap for any input, NaN included (it compares false both here
// and in JavaScript). The AVX2 scan compares eight entries at a time with the root's value and
// takes a block entry by entry only where one of them is larger: the root changes only inside
// such a block, so the entries skipped are exactly those the one-by-one loop rejects.
static inline int NAME(topk_better)(const float *x, int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); }
static inline void NAME(topk_down)(const float *x, int32_t *heap, int64_t k, int64_t i) {
  for (;;) {
    const int64_t l = 2 * i + 1, r = l + 1;
    int64_t m = i;
    if (l < k && NAME(topk_better)(x, heap[m], heap[l])) m = l; // heap[l] is worse than heap[m]
    if (r < k && NAME(topk_better)(x, heap[m], heap[r])) m = r;
    if (m == i) return;
    const int32_t t = heap[i];
    heap[i] = heap[m];
    heap[m] = t;
    i = m;
  }
}
/** One entry of the scan: i replaces the root when it is larger than the root's value. */
static inline void NAME(topk_take)(const float *x, int32_t *heap, int64_t k, int64_t i, float *floor) {
  if (x[i] > *floor) {
    heap[0] = (int32_t)i;
    NAME(topk_down)(x, heap, k, 0);
    *floor = x[heap[0]];
  }
}
static void NAME(topk_heap)(const float *x, int64_t n, int64_t k, int32_t *heap) {
  for (int64_t i = 0; i < k; i++) heap[i] = (int32_t)i;
  for (int64_t i = (k >> 1) - 1; i >= 0; i--) NAME(topk_down)(x, heap, k, i);
  float floor = x[heap[0]];
  int64_t i = k;
#if IMPL_AVX2
  while (i + 8 <= n) {
    if (!_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(floor), _CMP_GT_OQ))) { i += 8; continue; }
    for (const int64_t e = i + 8; i < e; i++) NAME(topk_take)(x, heap, k, i, &floor);
  }
#endif
  for (; i < n; i++) NAME(topk_take)(x, heap, k, i, &floor);
}

// Softmax of one row in place: e^(x - max) / Σ.
static void NAME(softmax_row)(float *x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; i++) if (x[i] > max) max = x[i];
  int64_t i = 0;
  float sum = 0.0f;
#if IMPL_AVX2
  sum = hsum_f32_avx2(vexp_shifted_sum(x, x, n, max, &i));
#endif
  for (; i < n; i++) { x[i] = expf(x[i] - max); sum += x[i]; }
  const float inv = 1.0f / sum;
  for (i = 0; i < n; i++) x[i] *= inv;
}

static void NAME(rms_norm_row)(const float *x, const float *w, int64_t n, float eps, float *o) {
  int64_t i = 0;
  float ss = 0.0f;
#if IMPL_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) { const __m256 v = _mm256_loadu_ps(x + i); acc = _mm256_fmadd_ps(v, v, acc); }
  ss = hsum_f32_avx2(acc);
#endif
  for (; i < n; i++) ss += x[i] * x[i];
  const float scale = (float)(1.0 / sqrt((double)ss / (double)n + (double)eps));
  for (i = 0; i < n; i++) o[i] = x[i] * scale * w[i];
}

static void NAME(layer_norm_row)(const float *x, const float *w, const float *b, int64_t n, float eps, float *o) {
  int64_t i = 0;
  float s = 0.0f;
#if IMPL_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  s = hsum_f32_avx2(acc);
#endif
  for (; i < n; i++) s += x[i];
  const float mean = s / (float)n;
  float vs = 0.0f;
  i = 0;
#if IMPL_AVX2
  __m256 acc2 = _mm256_setzero_ps();
  const __m256 mv = _mm256_set1_ps(mean);
  for (; i + 8 <= n; i += 8) { const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv); acc2 = _mm256_fmadd_ps(d, d, acc2); }
  vs = hsum_f32_avx2(acc2);
#endif
  for (; i < n; i++) vs += (x[i] - mean) * (x[i] - mean);
  const float scale = (float)(1.0 / sqrt((double)vs / (double)n + (double)eps));
  for (i = 0; i < n; i++) o[i] = (x[i] - mean) * scale * w[i] + (b ? b[i] : 0.0f);
}

