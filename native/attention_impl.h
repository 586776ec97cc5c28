// Inference attention over a KV cache, compiled twice by attention.c (portable / AVX2).
// Keys and values are read in the cache's own type (F32, F16, or Q8_0 blocks of 32 along a
// head), one row of one KV head at a time, converted once and shared by the query heads of that
// KV head (grouped-query attention reads each K/V row once for the whole group).

// One head's slice of a cached row (hd values of `type`) as floats: the row itself for F32,
// else converted into tmp.
static inline const float *NAME(kv_row)(const uint8_t *row, int type, int64_t hd, float *tmp) {
  if (type == T_F32) return (const float *)row;
  int64_t i = 0;
  if (type == T_F16) {
    const uint16_t *h = (const uint16_t *)row;
#if IMPL_AVX2
    for (; i + 8 <= hd; i += 8) _mm256_storeu_ps(tmp + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
#endif
    for (; i < hd; i++) tmp[i] = f16_to_f32(h[i]);
    return tmp;
  }
  // Q8_0: blocks of { half d; int8 q[32] } (34 bytes), value = d · q.
  for (int64_t b = 0; b < hd / 32; b++) {
    const uint8_t *blk = row + b * 34;
    uint16_t dh; memcpy(&dh, blk, 2);
    const float d = f16_to_f32(dh);
    const int8_t *q = (const int8_t *)(blk + 2);
    float *o = tmp + b * 32;
#if IMPL_AVX2
    const __m256 dv = _mm256_set1_ps(d);
    for (int j = 0; j < 32; j += 8)
      _mm256_storeu_ps(o + j, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + j))))));
#else
    for (int j = 0; j < 32; j++) o[j] = d * (float)q[j];
#endif
  }
  return tmp;
}

static inline float NAME(att_dot)(const float *a, const float *b, int64_t n) {
  int64_t i = 0;
  float s = 0.0f;
#if IMPL_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  s = hsum_f32_avx2(_mm256_add_ps(acc0, acc1));
#endif
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

// o += e · x over n values.
static inline void NAME(att_axpy)(float *o, float e, const float *x, int64_t n) {
  int64_t i = 0;
#if IMPL_AVX2
  const __m256 ev = _mm256_set1_ps(e);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + i), _mm256_loadu_ps(o + i)));
#endif
  for (; i < n; i++) o[i] += e * x[i];
}

/**
 * The partial softmax of query row t, for the `group` query heads of KV head kh, over keys
 * [j0, j1): per head, part = { m: max score, s: Σ e^(score − m), acc[hd]: Σ e^(score − m) v }.
 * scratch: group · ATT_CHUNK scores + hd floats for a converted row; vbuf: ATT_CHUNK · hd floats
 * for the chunk's value rows (the AVX2 path converts them once for all heads of the group).
 */
static void NAME(att_partial)(const att_t *a, int64_t t, int64_t kh, int64_t j0, int64_t j1, float *part, float *scratch, float *vbuf) {
  const int64_t hd = a->headDim, g = a->nHeads / a->nKV, n = j1 - j0, stride = hd + 2;
  float *scores = scratch, *tmp = scratch + g * ATT_CHUNK;
  const float *q = a->q + (t * a->nHeads + kh * g) * hd;
  for (int64_t j = 0; j < n; j++) {
    const float *k = NAME(kv_row)(a->k + (j0 + j) * a->rowBytes + kh * a->headBytes, a->type, hd, tmp);
    for (int64_t h = 0; h < g; h++) {
      float s = NAME(att_dot)(q + h * hd, k, hd) * a->scale;
      if (a->softcap > 0) s = a->softcap * tanhf(s / a->softcap);
      scores[h * ATT_CHUNK + j] = s;
    }
  }
  for (int64_t h = 0; h < g; h++) {
    float *sc = scores + h * ATT_CHUNK, *p = part + h * stride;
    float max = -INFINITY;
    for (int64_t j = 0; j < n; j++) if (sc[j] > max) max = sc[j];
    int64_t j = 0;
    float sum = 0.0f;
#if IMPL_AVX2
    sum = hsum_f32_avx2(vexp_shifted_sum(sc, sc, n, max, &j));
#endif
    for (; j < n; j++) { sc[j] = expf(sc[j] - max); sum += sc[j]; }
    p[0] = max; p[1] = sum;
    memset(p + 2, 0, hd * sizeof(float));
  }
#if IMPL_AVX2
  if (hd % 8 == 0) {
    // Each head's weighted sum of values kept in registers over the chunk's keys, 8 vectors at a
    // time: per output value the same fused multiply-adds in the same order as the loop below
    // (the same bits), without storing and reloading the sums after every key.
    const float *vr[ATT_CHUNK];
    for (int64_t j = 0; j < n; j++) vr[j] = NAME(kv_row)(a->v + (j0 + j) * a->rowBytes + kh * a->headBytes, a->type, hd, vbuf + j * hd);
    for (int64_t h = 0; h < g; h++) {
      const float *e = scores + h * ATT_CHUNK;
      float *o = part + h * stride + 2;
      int64_t i = 0;
      for (; i + 64 <= hd; i += 64) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
        for (int64_t j = 0; j < n; j++) {
          const __m256 ev = _mm256_set1_ps(e[j]);
          const float *x = vr[j] + i;
          s0 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x), s0);
          s1 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 8), s1);
          s2 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 16), s2);
          s3 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 24), s3);
          s4 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 32), s4);
          s5 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 40), s5);
          s6 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 48), s6);
          s7 = _mm256_fmadd_ps(ev, _mm256_loadu_ps(x + 56), s7);
        }
        _mm256_storeu_ps(o + i, s0); _mm256_storeu_ps(o + i + 8, s1); _mm256_storeu_ps(o + i + 16, s2); _mm256_storeu_ps(o + i + 24, s3);
        _mm256_storeu_ps(o + i + 32, s4); _mm256_storeu_ps(o + i + 40, s5); _mm256_storeu_ps(o + i + 48, s6); _mm256_storeu_ps(o + i + 56, s7);
      }
      for (; i < hd; i += 8) {
        __m256 s = _mm256_setzero_ps();
        for (int64_t j = 0; j < n; j++) s = _mm256_fmadd_ps(_mm256_set1_ps(e[j]), _mm256_loadu_ps(vr[j] + i), s);
        _mm256_storeu_ps(o + i, s);
      }
    }
    return;
  }
#endif
  for (int64_t j = 0; j < n; j++) {
    const float *v = NAME(kv_row)(a->v + (j0 + j) * a->rowBytes + kh * a->headBytes, a->type, hd, tmp);
    for (int64_t h = 0; h < g; h++) NAME(att_axpy)(part + h * stride + 2, scores[h * ATT_CHUNK + j], v, hd);
  }
}

// run ← run ⊕ part, the online-softmax merge of two partial results (run = { M, S, O[hd] }).
// A run with S = 0 is empty. Every path merges a row's chunks in ascending order with this.
static void NAME(att_merge)(float *run, const float *part, int64_t hd) {
  if (part[1] == 0.0f) return;
  if (run[1] == 0.0f) { memcpy(run, part, (hd + 2) * sizeof(float)); return; }
  const float m = run[0] > part[0] ? run[0] : part[0];
  const float a = expf(run[0] - m), b = expf(part[0] - m);
  run[0] = m;
  run[1] = run[1] * a + part[1] * b;
  float *o = run + 2;
  const float *x = part + 2;
  for (int64_t i = 0; i < hd; i++) o[i] = o[i] * a + x[i] * b;
}

// Whole rows: item = (t, kh); the chunks of the row's visible keys in order, merged as they go.
static void NAME(att_rows)(void *p, int64_t item, int ith) {
  const att_t *a = p;
  const int64_t t = item / a->nKV, kh = item % a->nKV, hd = a->headDim, g = a->nHeads / a->nKV, stride = hd + 2;
  float *scratch = pool_scratch(ith, 1, (size_t)(g * ATT_CHUNK + hd + 2 * g * stride + ATT_CHUNK * hd) * sizeof(float));
  float *part = scratch + g * ATT_CHUNK + hd, *run = part + g * stride, *vbuf = run + g * stride;
  for (int64_t h = 0; h < g; h++) run[h * stride + 1] = 0.0f;
  int64_t first, last;
  att_range(a, t, &first, &last);
  for (int64_t j0 = first; j0 <= last; j0 += ATT_CHUNK) {
    const int64_t j1 = j0 + ATT_CHUNK <= last + 1 ? j0 + ATT_CHUNK : last + 1;
    NAME(att_partial)(a, t, kh, j0, j1, part, scratch, vbuf);
    for (int64_t h = 0; h < g; h++) NAME(att_merge)(run + h * stride, part + h * stride, hd);
  }
  for (int64_t h = 0; h < g; h++) att_finish(a, t, kh * g + h, run + h * stride);
}

// Split over positions: item = (t, kh, chunk); each writes its partials to a->parts.
static void NAME(att_chunks)(void *p, int64_t item, int ith) {
  const att_t *a = p;
  const int64_t c = item % a->nChunks, tk = item / a->nChunks, t = tk / a->nKV, kh = tk % a->nKV;
  const int64_t hd = a->headDim, g = a->nHeads / a->nKV;
  float *part = a->parts + item * g * (hd + 2);
  int64_t first, last;
  att_range(a, t, &first, &last);
  const int64_t j0 = first + c * ATT_CHUNK, j1 = j0 + ATT_CHUNK <= last + 1 ? j0 + ATT_CHUNK : last + 1;
  if (j1 <= j0) { for (int64_t h = 0; h < g; h++) part[h * (hd + 2) + 1] = 0.0f; return; }
  float *scratch = pool_scratch(ith, 1, (size_t)(g * ATT_CHUNK + hd + ATT_CHUNK * hd) * sizeof(float));
  NAME(att_partial)(a, t, kh, j0, j1, part, scratch, scratch + g * ATT_CHUNK + hd);
}

// A batch of sequences (k_attention_batch): item → (segment, its own item number), then the
// one-sequence bodies above on that segment's att_t, so every row is computed as it is alone.
static void NAME(attb_rows)(void *p, int64_t item, int ith) {
  const attb_t *b = p;
  const int64_t s = attb_segment(b, item);
  NAME(att_rows)((void *)&b->segs[s], item - b->first[s], ith);
}
static void NAME(attb_chunks)(void *p, int64_t item, int ith) {
  const attb_t *b = p;
  const int64_t s = attb_segment(b, item);
  NAME(att_chunks)((void *)&b->segs[s], item - b->first[s], ith);
}

// n floats (whole rows) as `type`, the encoders of ggml: F16 rounds to nearest even (as F16C);
// Q8_0 per block of 32: d = amax / 127, q = round(x · (1/d)) half away from zero, d stored as F16.
static void NAME(kv_store)(const float *x, int64_t n, int type, uint8_t *dst) {
  if (type == T_F32) { memcpy(dst, x, (size_t)n * sizeof(float)); return; }
  int64_t i = 0;
  if (type == T_F16) {
    uint16_t *h = (uint16_t *)dst;
#if IMPL_AVX2
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; i++) h[i] = f32_to_f16(x[i]);
    return;
  }
  for (int64_t b = 0; b < n / 32; b++) {
    const float *v = x + b * 32;
    uint8_t *blk = dst + b * 34;
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) { const float a = fabsf(v[j]); if (a > amax) amax = a; }
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    memcpy(blk, &dh, 2);
    for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)roundf(v[j] * id);
  }
}
