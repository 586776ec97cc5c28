// Vector e^x, SiLU and GELU for 8 floats. Included inside a `#pragma GCC target("avx2,fma,...")`
// region (ops.c and train_ops.c compile their AVX2 pass that way).
#ifndef TOY_VMATH_AVX2_H
#define TOY_VMATH_AVX2_H

// e^x for 8 floats: x = n·ln2 + r, |r| <= ln2/2, e^r by its degree-6 Taylor polynomial (~1 ulp).
static inline __m256 vexp(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504089f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
static inline __m256 vsilu(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(x, _mm256_add_ps(one, vexp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
static inline __m256 vgelu(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), sgn = _mm256_set1_ps(-0.0f);
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 y = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
  const __m256 ay = _mm256_andnot_ps(sgn, y);
  const __m256 e = vexp(_mm256_mul_ps(_mm256_set1_ps(-2.0f), ay));
  __m256 th = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  th = _mm256_or_ps(th, _mm256_and_ps(sgn, y));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(one, th));
}
// tanh for 8 floats: sign(y) (1 − e^(−2|y|)) / (1 + e^(−2|y|)).
static inline __m256 vtanh(__m256 y) {
  const __m256 one = _mm256_set1_ps(1.0f), sgn = _mm256_set1_ps(-0.0f);
  const __m256 e = vexp(_mm256_mul_ps(_mm256_set1_ps(-2.0f), _mm256_andnot_ps(sgn, y)));
  return _mm256_or_ps(_mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e)), _mm256_and_ps(sgn, y));
}

// e^(x[i] − max) for the first multiple of 8 of n values, 8 at a time, written to out unless it
// is NULL (softmax keeps them, cross-entropy only sums); returns the 8 lane sums, *done the count.
static inline __m256 vexp_shifted_sum(const float *x, float *out, int64_t n, float max, int64_t *done) {
  __m256 acc = _mm256_setzero_ps();
  const __m256 mv = _mm256_set1_ps(max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = vexp(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    if (out) _mm256_storeu_ps(out + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  *done = i;
  return acc;
}

#endif
