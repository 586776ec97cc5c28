// Memory read bandwidth and int8 dot-product throughput of this machine, for comparing the
// matmul kernels against.  cc -O3 -mavx2 -mfma -pthread membw.c -o membw && ./membw [threads]
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

typedef struct { const uint8_t *p; size_t n; int reps; double sum; } job_t;

static void *read_sum(void *arg) { // streams the buffer with 256-bit loads
  job_t *j = arg;
  __m256i acc = _mm256_setzero_si256();
  for (int r = 0; r < j->reps; r++)
    for (size_t i = 0; i < j->n; i += 128) {
      acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *)(j->p + i)));
      acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *)(j->p + i + 32)));
      acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *)(j->p + i + 64)));
      acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *)(j->p + i + 96)));
    }
  int64_t s[4]; memcpy(s, &acc, 32);
  j->sum = (double)(s[0] + s[1] + s[2] + s[3]);
  return NULL;
}

static void *maddubs_loop(void *arg) { // 8 independent chains of maddubs+madd+add (the dot core)
  job_t *j = arg;
  __m256i a[8], w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5), one = _mm256_set1_epi16(1);
  for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_si256();
  for (long i = 0; i < (long)j->n; i++)
    for (int k = 0; k < 8; k++) a[k] = _mm256_add_epi32(a[k], _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), one));
  for (int k = 1; k < 8; k++) a[0] = _mm256_add_epi32(a[0], a[k]);
  int32_t s[8]; memcpy(s, a, 32);
  j->sum = s[0];
  return NULL;
}

int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 1;
  size_t per = 256u << 20; // 256 MiB per thread: far beyond the caches
  pthread_t th[64]; job_t jobs[64];
  for (int t = 0; t < nt; t++) {
    uint8_t *p = aligned_alloc(64, per);
    memset(p, t + 1, per);
    jobs[t] = (job_t){ p, per, 4, 0 };
  }
  double t0 = now();
  for (int t = 0; t < nt; t++) pthread_create(&th[t], NULL, read_sum, &jobs[t]);
  for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
  double dt = now() - t0;
  printf("read bandwidth, %d thread(s): %.1f GB/s\n", nt, nt * (double)per * 4 / dt / 1e9);
  for (int t = 0; t < nt; t++) jobs[t].n = 50000000;
  t0 = now();
  for (int t = 0; t < nt; t++) pthread_create(&th[t], NULL, maddubs_loop, &jobs[t]);
  for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
  dt = now() - t0;
  printf("int8 maddubs dot, %d thread(s): %.1f G int8-MAC/s\n", nt, nt * 50e6 * 8 * 32 / dt / 1e9);
  return 0;
}
