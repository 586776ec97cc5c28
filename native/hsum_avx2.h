// Horizontal sums of AVX2 vectors. Included inside a `#pragma GCC target("avx2,...")` region.
#ifndef TOY_HSUM_AVX2_H
#define TOY_HSUM_AVX2_H

static inline float hsum_f32_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// hsum_f32_avx2 of eight vectors at once, lane r = hsum_f32_avx2(v[r]) bit for bit: the same
// additions in the same tree, ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)), done for
// eight vectors side by side after moving their lanes into place.
static inline __m256 hsum8_f32_avx2(const __m256 v[8]) {
  __m256 s[4]; // s[p]: halves added, keys 2p (low lane) and 2p + 1 (high lane)
  for (int p = 0; p < 4; p++)
    s[p] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x20), _mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x31));
  // (s0 + s2, s1 + s3) of each key: keys 0, 2 | 1, 3 and 4, 6 | 5, 7
  const __m256 t0 = _mm256_add_ps(_mm256_shuffle_ps(s[0], s[1], 0x44), _mm256_shuffle_ps(s[0], s[1], 0xEE));
  const __m256 t1 = _mm256_add_ps(_mm256_shuffle_ps(s[2], s[3], 0x44), _mm256_shuffle_ps(s[2], s[3], 0xEE));
  // their sum: keys 0, 2, 4, 6 | 1, 3, 5, 7, then in order
  const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(t0, t1, 0x88), _mm256_shuffle_ps(t0, t1, 0xDD));
  return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline int32_t hsum_i32_avx2(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/** hsum_i32_avx2 of eight vectors at once: lane c = the sum of v[c]'s eight lanes. */
static inline __m256i hsum8_i32_avx2(const __m256i *v) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i g0 = _mm256_hadd_epi32(h01, h23), g1 = _mm256_hadd_epi32(h45, h67); // v0..v3's halves | v4..v7's
  return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

#endif
