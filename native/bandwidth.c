// Memory read bandwidth of this machine: the threads together stream eight times the last-level
// cache (at least 64 MiB each), each its own buffer, once per pass. The benchmark divides it by a
// model's weight bytes per token to get the bound on generation speed. Smaller buffers read
// twice measure the cache as well: 64 MiB per thread read 38–41 GB/s with one thread here, 256
// MiB 30–34 (a 32 MiB L3). The buffers are on transparent huge pages where the kernel allows it,
// as the repacked weights are (native/addon.c arena_take): on 4 KB pages the stream measures the
// TLB as much as the memory. Half the passes prefetch in software as the decode kernels do
// (native/prefetch.h) and the best pass counts, so the bound is the faster of the two ways to read
// (on the Intel Xeon of stop 30 the plain stream was the faster: 13 against 12 GB/s).

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "prefetch.h"

typedef struct { const uint64_t *p; size_t n; int prefetch; uint64_t sum; } stream_job;

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx2")))
static void *stream_read(void *arg) {
  stream_job *j = arg;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i < j->n; i += 8) { // one 64-byte line per step
    if (j->prefetch) stream_prefetch(j->p + i, 64);
    a0 += j->p[i] + j->p[i + 4];
    a1 += j->p[i + 1] + j->p[i + 5];
    a2 += j->p[i + 2] + j->p[i + 6];
    a3 += j->p[i + 3] + j->p[i + 7];
  }
  j->sum = a0 + a1 + a2 + a3;
  return NULL;
}

/** Bytes per second read by `threads` threads together (best of three passes). */
double toy_read_bandwidth(int threads) {
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 <= 0) l3 = 32L << 20;
  size_t bytes = (size_t)l3 * 8 / (size_t)threads;
  if (bytes < ((size_t)64 << 20)) bytes = (size_t)64 << 20;
  bytes &= ~(((size_t)2 << 20) - 1);
  const size_t n = bytes / sizeof(uint64_t);
  stream_job jobs[64];
  pthread_t th[64];
  for (int t = 0; t < threads; t++) {
    uint64_t *p = aligned_alloc((size_t)2 << 20, bytes);
    if (!p) { for (int u = 0; u < t; u++) free((void *)jobs[u].p); return 0; }
    madvise(p, bytes, MADV_HUGEPAGE); // before the first write, so its faults map 2 MB pages
    memset(p, t + 1, bytes);
    jobs[t] = (stream_job){ p, n, 0, 0 };
  }
  double best = 0;
  for (int pass = 0; pass < 6; pass++) { // three passes each without and with software prefetch
    for (int t = 0; t < threads; t++) jobs[t].prefetch = pass & 1;
    double t0 = seconds();
    for (int t = 1; t < threads; t++) pthread_create(&th[t], NULL, stream_read, &jobs[t]);
    stream_read(&jobs[0]);
    for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
    double bw = (double)threads * bytes / (seconds() - t0);
    if (bw > best) best = bw;
  }
  for (int t = 0; t < threads; t++) free((void *)jobs[t].p);
  return best;
}
