// A persistent thread pool running "for each chunk" jobs. The caller's thread is worker 0;
// workers 1..n-1 wait for a job by spinning briefly (back-to-back small kernels pay ~1 µs to
// start), yielding the core every few µs, and then sleep on a condvar. The yield matters on a
// busy machine: a spinning worker that shares a core with the caller otherwise holds it for its
// whole time slice while the caller, who would publish the next job, waits (on a loaded machine
// decode on 2 threads ran at half the speed of 1 thread without the yield).
//
// Each thread owns a contiguous range of the job's chunks (thread i: chunks [i·n/T, (i+1)·n/T))
// and takes them from the front, in order; a thread whose range is empty steals from the back of
// the others'. So a worker that lost its core (an oversubscribed machine) never holds up a job:
// the caller takes its remaining chunks, closes the job, and waits only for the workers that
// joined it. Contiguous ranges matter for decode: the chunks of a matrix–vector product are runs
// of weight rows, and two threads taking turns along one shared counter each read a broken
// stream (their hardware prefetchers restart at every chunk) and pass the counter's cache line
// back and forth; one stream per thread made 2-thread decode 1.4–1.5× faster than 1 thread
// where alternating chunks gave no gain at all. A thread's own claims touch only its own cache
// line. Which thread computes a chunk never changes its result.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "toy.h"

#define MAX_THREADS 256
#define SCRATCH_SLOTS 4
#define CLOSED (1ull << 31)

typedef struct { void *p; size_t n; } scratch_t;

// The job's description (written by the caller before it publishes gen), the chunk counter (bumped
// by every claim) and the finish count each have their own cache line: a claim does not take the
// line the other threads read the job from, or spin on.
static struct {
  _Alignas(64) atomic_uint gen; // bumped once per job
  atomic_ullong state;          // gen << 32 | CLOSED | number of workers that joined
  toy_chunk_fn fn;
  void *ctx;
  _Alignas(64) atomic_int done;   // joined workers that finished
  _Alignas(64) int n;
  atomic_int sleeping; // workers blocked on the condvar
  atomic_int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long spin_ns;
  unsigned start_gen;
  pthread_t tid[MAX_THREADS];
} P = { .n = 1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

// Thread i's chunks not yet taken: [lo, hi) packed as hi << 32 | lo, one cache line each. The
// owner takes lo (front), thieves take hi − 1 (back); a compare-and-swap makes each chunk taken once.
typedef struct { _Alignas(64) atomic_ullong lohi; } range_t;
static range_t R[MAX_THREADS];

static scratch_t scratch[MAX_THREADS][SCRATCH_SLOTS];

// TOY_POOL_STATS=1: where a job's wall time goes, printed to stderr at exit (for profiling
// decode: time between jobs on the caller, its own chunks, its wait for the workers' join, and
// each thread's busy time and chunk count). Off: one predictable branch per job.
static int stats_on;
typedef struct { _Alignas(64) long busy_ns; long chunks; long jobs; } tstat_t;
static tstat_t TS[MAX_THREADS];
static long st_calls, st_calls_ns;
static long st_jobs, st_serial_jobs, st_between_ns, st_own_ns, st_join_ns, st_last_end, st_first;
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int64_t take_front(range_t *r) {
  unsigned long long v = atomic_load_explicit(&r->lohi, memory_order_relaxed);
  for (;;) {
    const uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    if (lo >= hi) return -1;
    if (atomic_compare_exchange_weak_explicit(&r->lohi, &v, v + 1, memory_order_relaxed, memory_order_relaxed)) return lo;
  }
}

static int64_t take_back(range_t *r) {
  unsigned long long v = atomic_load_explicit(&r->lohi, memory_order_relaxed);
  for (;;) {
    const uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    if (lo >= hi) return -1;
    const unsigned long long w = (unsigned long long)(hi - 1) << 32 | lo;
    if (atomic_compare_exchange_weak_explicit(&r->lohi, &v, w, memory_order_relaxed, memory_order_relaxed)) return hi - 1;
  }
}

// Thread ith's own range first, then what is left of the others' (from their back ends).
static void claim_chunks(int ith) {
  const toy_chunk_fn fn = P.fn;
  void *const ctx = P.ctx;
  const int n = P.n;
  const long t0 = stats_on ? now_ns() : 0;
  long taken = 0;
  for (int64_t c; (c = take_front(&R[ith])) >= 0; taken++) fn(ctx, c, ith);
  for (int k = 1; k < n; k++) {
    range_t *r = &R[(ith + k) % n];
    for (int64_t c; (c = take_back(r)) >= 0; taken++) fn(ctx, c, ith);
  }
  if (stats_on) { TS[ith].busy_ns += now_ns() - t0; TS[ith].chunks += taken; TS[ith].jobs++; }
}

long pool_stats_begin(void) { return stats_on ? now_ns() : 0; }
void pool_stats_call(long t0) { if (stats_on) { st_calls++; st_calls_ns += now_ns() - t0; } }

#include <stdio.h>
static void print_stats(void) {
  fprintf(stderr, "pool stats: %ld kernel calls, %.3f ms inside them (the rest of the caller's time is JavaScript)\n", st_calls, st_calls_ns / 1e6);
  fprintf(stderr, "pool stats: %ld jobs (+%ld serial), caller: between jobs %.3f ms, own chunks %.3f ms, join wait %.3f ms\n",
          st_jobs, st_serial_jobs, st_between_ns / 1e6, st_own_ns / 1e6, st_join_ns / 1e6);
  fprintf(stderr, "pool stats: %.1f MB of weights read ahead by waiting workers (readahead.c)\n", readahead_bytes() / 1e6);
  for (int i = 0; i < P.n; i++)
    fprintf(stderr, "  thread %d: busy %.3f ms, %ld chunks, joined %ld jobs\n", i, TS[i].busy_ns / 1e6, TS[i].chunks, TS[i].jobs);
}

static void *worker(void *arg) {
  const int ith = (int)(intptr_t)arg;
  unsigned seen = P.start_gen; // the generation when the pool started: no job is missed
  for (;;) {
    unsigned g = atomic_load_explicit(&P.gen, memory_order_acquire);
    if (g == seen) {
      const long t0 = now_ns();
      for (int i = 1;; i++) {
        g = atomic_load_explicit(&P.gen, memory_order_acquire);
        if (g != seen || atomic_load(&P.stop)) break;
        if (!readahead_step(ith, P.n)) cpu_relax(); // (readahead.c)
        // Now and then let another thread waiting for this core run (on a busy machine it may
        // be the caller, whose next job this worker waits for); a quick return when none is.
        if ((i & 255) == 0) {
          if (now_ns() - t0 > P.spin_ns) break;
          sched_yield();
        }
      }
    }
    if (g == seen && !atomic_load(&P.stop)) {
      pthread_mutex_lock(&P.mu);
      atomic_fetch_add(&P.sleeping, 1);
      while ((g = atomic_load(&P.gen)) == seen && !atomic_load(&P.stop)) pthread_cond_wait(&P.cv, &P.mu);
      atomic_fetch_sub(&P.sleeping, 1);
      pthread_mutex_unlock(&P.mu);
    }
    if (atomic_load(&P.stop)) return NULL;
    seen = g;
    // Join job g unless it has moved on or been closed.
    unsigned long long s = atomic_load(&P.state);
    int joined = 0;
    while ((unsigned)(s >> 32) == g && !(s & CLOSED)) {
      if (atomic_compare_exchange_weak(&P.state, &s, s + 1)) { joined = 1; break; }
    }
    if (!joined) continue;
    claim_chunks(ith);
    atomic_fetch_add_explicit(&P.done, 1, memory_order_release);
  }
}

static void stop_workers(void) {
  if (P.n <= 1) return;
  pthread_mutex_lock(&P.mu);
  atomic_store(&P.stop, 1);
  pthread_cond_broadcast(&P.cv);
  pthread_mutex_unlock(&P.mu);
  for (int i = 1; i < P.n; i++) pthread_join(P.tid[i], NULL);
  atomic_store(&P.stop, 0);
  P.n = 1;
}

static void start_workers(int n) {
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  P.n = 1;
  P.start_gen = atomic_load(&P.gen);
  for (int i = 1; i < n; i++) {
    if (pthread_create(&P.tid[i], NULL, worker, (void *)(intptr_t)i) != 0) break;
    P.n = i + 1;
  }
}

void pool_init(int nthreads) {
  const char *s = getenv("TOY_SPIN_US");
  P.spin_ns = (s ? atol(s) : 2000) * 1000L;
  const char *st = getenv("TOY_POOL_STATS");
  if (st && *st && *st != '0') { stats_on = 1; atexit(print_stats); }
  start_workers(nthreads);
}

int pool_threads(void) { return P.n; }

void pool_set_threads(int n) {
  pthread_mutex_lock(&run_mu);
  stop_workers();
  start_workers(n);
  pthread_mutex_unlock(&run_mu);
}

void pool_for(toy_chunk_fn fn, void *ctx, int64_t nchunks) {
  if (nchunks <= 0) return;
  pthread_mutex_lock(&run_mu);
  const long t_in = stats_on ? now_ns() : 0;
  if (P.n <= 1 || nchunks == 1 || nchunks > UINT32_MAX) { // (ranges hold 32-bit chunk numbers)
    for (int64_t c = 0; c < nchunks; c++) fn(ctx, c, 0);
    if (stats_on) { st_serial_jobs++; const long t = now_ns(); TS[0].busy_ns += t - t_in; if (st_first) st_between_ns += t_in - st_last_end; st_first = 1; st_last_end = t; }
    pthread_mutex_unlock(&run_mu);
    return;
  }
  P.fn = fn;
  P.ctx = ctx;
  for (int i = 0; i < P.n; i++) {
    const unsigned long long lo = (unsigned long long)(nchunks * i / P.n), hi = (unsigned long long)(nchunks * (i + 1) / P.n);
    atomic_store_explicit(&R[i].lohi, hi << 32 | lo, memory_order_relaxed); // published by the gen store below
  }
  atomic_store(&P.done, 0);
  const unsigned g = atomic_load(&P.gen) + 1;
  atomic_store(&P.state, (unsigned long long)g << 32);
  atomic_store(&P.gen, g); // publish
  if (atomic_load(&P.sleeping) > 0) {
    pthread_mutex_lock(&P.mu);
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
  }
  claim_chunks(0);
  const long t_own = stats_on ? now_ns() : 0;
  const int joined = (int)(atomic_fetch_or(&P.state, CLOSED) & (CLOSED - 1));
  for (int i = 1; atomic_load_explicit(&P.done, memory_order_acquire) < joined; i++) {
    cpu_relax();
    if ((i & 1023) == 0) sched_yield(); // a joined worker lost its core mid-chunk
  }
  if (stats_on) {
    const long t = now_ns();
    st_jobs++; st_own_ns += t_own - t_in; st_join_ns += t - t_own;
    if (st_first) st_between_ns += t_in - st_last_end;
    st_first = 1; st_last_end = t;
  }
  pthread_mutex_unlock(&run_mu);
}

void *pool_scratch(int ith, int slot, size_t bytes) {
  scratch_t *s = &scratch[ith][slot];
  if (s->n < bytes) {
    free(s->p);
    size_t n = (bytes + 4095) & ~(size_t)4095;
    s->p = aligned_alloc(64, n);
    s->n = s->p ? n : 0;
  }
  return s->p;
}
