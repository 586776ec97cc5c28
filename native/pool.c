// A persistent thread pool running "for each chunk" jobs. The caller's thread is worker 0;
// workers 1..n-1 wait for a job by spinning briefly (back-to-back small kernels pay ~1 µs to
// start), yielding the core every few µs, and then sleep on a condvar. The yield matters on a
// busy machine: a spinning worker that shares a core with the caller otherwise holds it for its
// whole time slice while the caller, who would publish the next job, waits (on a loaded machine
// decode on 2 threads ran at half the speed of 1 thread without the yield).
//
// Chunks are claimed from a shared counter, so a worker that lost its core (an oversubscribed
// machine) never holds up a job: the caller takes the remaining chunks, closes the job, and waits
// only for the workers that joined it. Which thread computes a chunk never changes its result.
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
  int64_t nchunks;
  _Alignas(64) atomic_llong next; // next chunk to claim
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

static scratch_t scratch[MAX_THREADS][SCRATCH_SLOTS];
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

static void claim_chunks(int ith) {
  const toy_chunk_fn fn = P.fn;
  void *const ctx = P.ctx;
  const int64_t n = P.nchunks;
  for (;;) {
    const int64_t c = atomic_fetch_add_explicit(&P.next, 1, memory_order_relaxed);
    if (c >= n) return;
    fn(ctx, c, ith);
  }
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
        cpu_relax();
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
  if (P.n <= 1 || nchunks == 1) {
    for (int64_t c = 0; c < nchunks; c++) fn(ctx, c, 0);
    pthread_mutex_unlock(&run_mu);
    return;
  }
  P.fn = fn;
  P.ctx = ctx;
  P.nchunks = nchunks;
  atomic_store(&P.next, 0);
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
  const int joined = (int)(atomic_fetch_or(&P.state, CLOSED) & (CLOSED - 1));
  for (int i = 1; atomic_load_explicit(&P.done, memory_order_acquire) < joined; i++) {
    cpu_relax();
    if ((i & 1023) == 0) sched_yield(); // a joined worker lost its core mid-chunk
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
