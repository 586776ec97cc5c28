// Bodies of the training ops of train_ops.c, compiled twice (portable / AVX2). Each works on one
// chunk (a range of rows or elements); sums over rows go to the chunk's own partial, which the
// caller adds up in chunk order. Sums over a row are in double unless said otherwise.

// --- gated activations: ∂gate += act'(gate) · up · ∂y,  ∂up += act(gate) · ∂y -------------------

static void NAME(gated_backward)(int act, const float *g, const float *u, const float *dy, float *dg, float *du, int64_t n) {
  int64_t i = 0;
#if IMPL_AVX2
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i), d = _mm256_loadu_ps(dy + i);
    __m256 a, da;
    if (act == ACT_SILU) {
      const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, vexp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
      a = _mm256_mul_ps(x, s);
      da = _mm256_mul_ps(s, _mm256_fmadd_ps(x, _mm256_sub_ps(one, s), one));
    } else {
      const __m256 x2 = _mm256_mul_ps(x, x);
      const __m256 t = vtanh(_mm256_mul_ps(_mm256_set1_ps(GELU_K), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), _mm256_mul_ps(x2, x), x)));
      a = _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, t));
      const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(GELU_K), _mm256_fmadd_ps(_mm256_set1_ps(3 * 0.044715f), x2, one));
      da = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_fnmadd_ps(t, t, one)), inner, _mm256_mul_ps(half, _mm256_add_ps(one, t)));
    }
    if (dg) _mm256_storeu_ps(dg + i, _mm256_fmadd_ps(_mm256_mul_ps(da, _mm256_loadu_ps(u + i)), d, _mm256_loadu_ps(dg + i)));
    if (du) _mm256_storeu_ps(du + i, _mm256_fmadd_ps(a, d, _mm256_loadu_ps(du + i)));
  }
#endif
  for (; i < n; i++) {
    float a, da;
    act_and_grad(act, g[i], &a, &da);
    if (dg) dg[i] += da * u[i] * dy[i];
    if (du) du[i] += a * dy[i];
  }
}

// --- RMSNorm backward, rows [r0, r1) ------------------------------------------------------------
//   r = 1/√(mean(x²) + ε),  ∂x += r (∂y ⊙ g) − x r³ mean(∂y ⊙ g ⊙ x),  ∂g += Σ_rows ∂y ⊙ x r

static void NAME(rms_norm_backward)(const float *dy, const float *x, const float *g, int64_t r0, int64_t r1, int64_t n, float eps,
                                   float *dx, double *dgPart) {
  for (int64_t r = r0; r < r1; r++) {
    const float *X = x + r * n, *DY = dy + r * n;
    double ss = 0, dot = 0;
    for (int64_t i = 0; i < n; i++) {
      ss += (double)X[i] * X[i];
      dot += (double)DY[i] * g[i] * X[i];
    }
    const double s = 1 / sqrt(ss / (double)n + eps);
    if (dx) {
      const double c = s * s * s * dot / (double)n;
      float *DX = dx + r * n;
      for (int64_t i = 0; i < n; i++) DX[i] = (float)(DX[i] + (s * DY[i] * g[i] - X[i] * c));
    }
    if (dgPart) for (int64_t i = 0; i < n; i++) dgPart[i] += (double)DY[i] * X[i] * s;
  }
}

// --- RoPE backward, rows [t0, t1): the inverse rotation, and ∂invFreq[i] += p (−∂y_a y_b + ∂y_b y_a)

// `tc`, `ts` (or NULL): cos and sin of every position from `pmin` on, made once per call (a
// batch repeats its positions), the same values as computed here.
static void NAME(rope_backward)(const float *dy, const float *y, int64_t t0, int64_t t1, int64_t heads, int64_t headDim, int64_t dims,
                               const int32_t *pos, const float *invFreq, int neox, float *dx, double *dinvPart,
                               const double *tc, const double *ts, int32_t pmin) {
  const int64_t half = dims / 2;
  double cbuf[ROPE_MAX_HALF], sbuf[ROPE_MAX_HALF];
  for (int64_t t = t0; t < t1; t++) {
    const double p = pos[t];
    const double *c = cbuf, *s = sbuf;
    if (tc) { c = tc + (pos[t] - pmin) * half; s = ts + (pos[t] - pmin) * half; }
    else for (int64_t i = 0; i < half; i++) { const double a = p * invFreq[i]; cbuf[i] = cos(a); sbuf[i] = sin(a); }
    for (int64_t h = 0; h < heads; h++) {
      const int64_t o = (t * heads + h) * headDim;
      const float *DY = dy + o, *Y = y + o;
      if (dx) {
        float *DX = dx + o;
        for (int64_t i = dims; i < headDim; i++) DX[i] += DY[i];
        for (int64_t i = 0; i < half; i++) {
          const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
          DX[a] = (float)(DX[a] + (DY[a] * c[i] + DY[b] * s[i]));
          DX[b] = (float)(DX[b] + (-DY[a] * s[i] + DY[b] * c[i]));
        }
      }
      if (dinvPart)
        for (int64_t i = 0; i < half; i++) {
          const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
          dinvPart[i] += p * (-(double)DY[a] * Y[b] + (double)DY[b] * Y[a]);
        }
    }
  }
}

// --- cross-entropy, rows [t0, t1): lse[t] = log Σ exp z_t; returns Σ (lse − z[target]) ----------

static double NAME(cross_entropy)(const float *z, const int32_t *target, int64_t t0, int64_t t1, int64_t V, int32_t ignore, double *lse) {
  double total = 0;
  for (int64_t t = t0; t < t1; t++) {
    if (target[t] == ignore) continue;
    const float *Z = z + t * V;
    float max = -INFINITY;
    for (int64_t i = 0; i < V; i++) if (Z[i] > max) max = Z[i];
    int64_t i = 0;
    double sum = 0;
#if IMPL_AVX2
    sum = hsum_f32_avx2(vexp_shifted_sum(Z, NULL, V, max, &i));
#endif
    for (; i < V; i++) sum += expf(Z[i] - max);
    lse[t] = max + log(sum);
    total += lse[t] - Z[target[t]];
  }
  return total;
}

/** ∂z_t += g · (softmax(z_t) − onehot(target_t)) for the scored rows of [t0, t1). */
static void NAME(cross_entropy_backward)(const float *z, const int32_t *target, const double *lse, int64_t t0, int64_t t1, int64_t V,
                                        int32_t ignore, float g, float *dz) {
  for (int64_t t = t0; t < t1; t++) {
    if (target[t] == ignore) continue;
    const float *Z = z + t * V;
    float *D = dz + t * V;
    const float l = (float)lse[t];
    int64_t i = 0;
#if IMPL_AVX2
    const __m256 lv = _mm256_set1_ps(l), gv = _mm256_set1_ps(g);
    for (; i + 8 <= V; i += 8)
      _mm256_storeu_ps(D + i, _mm256_fmadd_ps(gv, vexp(_mm256_sub_ps(_mm256_loadu_ps(Z + i), lv)), _mm256_loadu_ps(D + i)));
#endif
    for (; i < V; i++) D[i] += g * expf(Z[i] - l);
    D[target[t]] -= g;
  }
}

// --- elementwise over [i0, i1) ------------------------------------------------------------------

/** AdamW in double, in the order of src/optim/adamw.ts (no FMA: this file is ISO C, so the
 *  compiler does not contract), so the update is the reference's to the bit. */
static void NAME(adamw)(float *theta, const float *g, float *m, float *v, int64_t i0, int64_t i1, const toy_adamw_t *h) {
  int64_t i = i0;
#if IMPL_AVX2
  // Four lanes of the same double operations (division and square root are exact in IEEE
  // arithmetic, vector or not); m and v are rounded to float before they are used, as stored.
  const __m256d b1 = _mm256_set1_pd(h->b1), c1 = _mm256_set1_pd(1 - h->b1), b2 = _mm256_set1_pd(h->b2), c2 = _mm256_set1_pd(1 - h->b2);
  const __m256d decay = _mm256_set1_pd(h->decay), step = _mm256_set1_pd(h->stepSize), bc2 = _mm256_set1_pd(h->bc2), eps = _mm256_set1_pd(h->eps);
  const __m256d gs = _mm256_set1_pd(h->gradScale);
  const int scaled = h->gradScale != 1;
  for (; i + 4 <= i1; i += 4) {
    __m256d gd = _mm256_cvtps_pd(_mm_loadu_ps(g + i));
    if (scaled) gd = _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_mul_pd(gd, gs))); // float(g · s), as clipping stores it
    const __m128 mf = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(b1, _mm256_cvtps_pd(_mm_loadu_ps(m + i))), _mm256_mul_pd(c1, gd)));
    const __m128 vf = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(b2, _mm256_cvtps_pd(_mm_loadu_ps(v + i))), _mm256_mul_pd(_mm256_mul_pd(c2, gd), gd)));
    _mm_storeu_ps(m + i, mf);
    _mm_storeu_ps(v + i, vf);
    const __m256d den = _mm256_add_pd(_mm256_div_pd(_mm256_sqrt_pd(_mm256_cvtps_pd(vf)), bc2), eps);
    const __m256d th = _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(theta + i)), decay), _mm256_div_pd(_mm256_mul_pd(step, _mm256_cvtps_pd(mf)), den));
    _mm_storeu_ps(theta + i, _mm256_cvtpd_ps(th));
  }
#endif
  for (; i < i1; i++) {
    const float gi = h->gradScale != 1 ? (float)(g[i] * h->gradScale) : g[i];
    m[i] = (float)(h->b1 * m[i] + (1 - h->b1) * gi);
    v[i] = (float)(h->b2 * v[i] + (1 - h->b2) * gi * gi);
    theta[i] = (float)(theta[i] * h->decay - (h->stepSize * m[i]) / (sqrt((double)v[i]) / h->bc2 + h->eps));
  }
}

static double NAME(sum_squares)(const float *x, int64_t i0, int64_t i1) {
  double s[4] = { 0, 0, 0, 0 };
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4) for (int j = 0; j < 4; j++) s[j] += (double)x[i + j] * x[i + j];
  for (; i < i1; i++) s[0] += (double)x[i] * x[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

static void NAME(scale)(float *x, int64_t i0, int64_t i1, double s) {
  for (int64_t i = i0; i < i1; i++) x[i] = (float)(x[i] * s);
}

static void NAME(accumulate)(float *dst, const float *src, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; i++) dst[i] += src[i];
}
