// Readahead of the next matrix product's weights by idle pool workers.
//
// Decoding one token is a stream of weights: each matrix product reads its weight once, and
// between two products the caller runs JavaScript and small single-threaded kernels (norms,
// RoPE, the KV store, attention over a short cache) while the pool's workers wait. With 2
// threads that serial part is ~20% of a float decode step, and the memory bus idles through
// it. A decode step runs the same products in the same order every time, so the order learned
// in one step predicts the next: when a product starts, the weights of the product that followed
// it last time become the hint, and a waiting worker reads the part of them that it will compute
// (thread i of n: the bytes from i/n of the way through, up to READAHEAD_MAX) into its own
// caches. Reading changes no result; a wrong guess costs only bandwidth that was idle.
//
// Only memory whose release this file hears about is ever read ahead: file mappings (mapFile)
// and repacked copies (repack), registered when made and unregistered by their finalizers. An
// unregister forgets everything learned and waits until no worker is inside a read, so a worker
// never touches freed memory. Weights in JavaScript-owned arrays are simply never hinted.
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "toy.h"

#define MAX_REGIONS 4096
#define MAX_WORKERS 256
#define TABLE_SIZE 1024           // products remembered (open addressing; a power of two)
#define READAHEAD_BLOCK 4096      // bytes read between two looks at the job counter
#define READAHEAD_MAX (768 << 10) // per worker and hint: most of a Zen 4 core's 1 MB L2

// TOY_READAHEAD: the KB each worker reads ahead per product (0: none).
static size_t max_bytes = READAHEAD_MAX;
void readahead_init(void) {
  const char *e = getenv("TOY_READAHEAD");
  if (e && *e) max_bytes = (size_t)atol(e) << 10;
}

typedef struct { const uint8_t *p[TOY_MM_MULTI_MAX]; size_t len[TOY_MM_MULTI_MAX]; int n; } op_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { const uint8_t *p; size_t len; } regions[MAX_REGIONS];
static int nregions; // high-water mark of regions[]
// One entry per product seen (keyed by its first weight): the product itself, if its weights are
// all registered (checked once, when the entry is made), and the product that followed it.
typedef struct { const uint8_t *key; op_t self, next; int ok; } entry_t;
static entry_t table[TABLE_SIZE];
static entry_t *prev; // the previous product's entry, when registered

// The hint, published seqlock-style: seq is odd while it is written.
static atomic_uint seq;
static op_t hint;
static atomic_int reading[MAX_WORKERS]; // worker i is inside a read of the hint's bytes

// Worker i's readahead: the op it read the hint into, and the span of the op's bytes (its weights
// laid end to end) still to read.
typedef struct { _Alignas(64) unsigned seen; op_t op; size_t off, end; } worker_ra_t;
static worker_ra_t W[MAX_WORKERS];
static atomic_long bytes_read; // for TOY_POOL_STATS

long readahead_bytes(void) { return atomic_load(&bytes_read); }

static int registered(const uint8_t *p, size_t len) {
  for (int i = 0; i < nregions; i++)
    if (regions[i].p && p >= regions[i].p && p + len <= regions[i].p + regions[i].len) return 1;
  return 0;
}

void readahead_register(const void *p, size_t len) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < MAX_REGIONS; i++)
    if (!regions[i].p) {
      regions[i].p = p;
      regions[i].len = len;
      if (i >= nregions) nregions = i + 1;
      break;
    }
  pthread_mutex_unlock(&mu);
}

static void publish(const op_t *op) {
  atomic_fetch_add(&seq, 1);
  if (op) hint = *op; else hint.n = 0;
  atomic_fetch_add(&seq, 1);
}

void readahead_unregister(const void *p) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nregions; i++) if (regions[i].p == p) regions[i].p = NULL;
  memset(table, 0, sizeof table);
  prev = NULL;
  publish(NULL);
  // A worker that saw the old hint may be reading it: wait until it is out (one block at most).
  for (int i = 0; i < MAX_WORKERS; i++)
    while (atomic_load(&reading[i])) {}
  pthread_mutex_unlock(&mu);
}

static int same_op(const op_t *a, const op_t *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) if (a->p[i] != b->p[i] || a->len[i] != b->len[i]) return 0;
  return 1;
}

/** The entry of the product whose first weight is key (made if new), or NULL when the table is full. */
static entry_t *entry_of(const uint8_t *key) {
  unsigned s = (unsigned)(((uintptr_t)key >> 6) * 2654435761u) & (TABLE_SIZE - 1);
  for (int k = 0; k < TABLE_SIZE; k++, s = (s + 1) & (TABLE_SIZE - 1)) {
    if (table[s].key == key) return &table[s];
    if (!table[s].key) { table[s].key = key; return &table[s]; }
  }
  return NULL;
}

void readahead_before(const uint8_t *const *p, const size_t *len, int n) {
  if (!max_bytes || pool_threads() < 2 || n < 1 || n > TOY_MM_MULTI_MAX) return;
  op_t cur = { .n = n };
  for (int i = 0; i < n; i++) { cur.p[i] = p[i]; cur.len[i] = len[i]; }
  pthread_mutex_lock(&mu);
  entry_t *e = entry_of(p[0]);
  if (e && !same_op(&e->self, &cur)) {
    int ok = 1;
    for (int i = 0; i < n && ok; i++) ok = registered(p[i], len[i]);
    e->self = cur;
    e->ok = ok;
    e->next.n = 0;
  }
  if (e && !e->ok) e = NULL; // not registered: never hinted, nor learned from
  if (prev && e) prev->next = cur; // learn: this product followed the previous one
  prev = e;
  publish(e && e->next.n ? &e->next : NULL);
  pthread_mutex_unlock(&mu);
}

/** Byte off of an op's weights laid end to end. */
static const uint8_t *at(const op_t *op, size_t off) {
  for (int i = 0; i < op->n; i++) {
    if (off < op->len[i]) return op->p[i] + off;
    off -= op->len[i];
  }
  return NULL;
}

int readahead_step(int ith, int nthreads) {
  if (nthreads < 2 || ith < 1 || ith >= nthreads) return 0; // (the pool is being resized)
  worker_ra_t *w = &W[ith];
  const unsigned s = atomic_load(&seq);
  if (s != w->seen && !(s & 1)) { // a new hint: copy it, and keep the copy only if it was not being rewritten
    op_t op = hint;
    if (atomic_load(&seq) == s) {
      w->seen = s;
      w->op = op;
      size_t total = 0;
      for (int i = 0; i < op.n; i++) total += op.len[i];
      // Its own share (the pool hands thread i the chunks from i/n of the way through).
      const size_t share = total / (size_t)nthreads;
      w->off = share * (size_t)ith;
      w->end = w->off + (share < max_bytes ? share : max_bytes);
    }
  }
  if (w->seen != s || w->off >= w->end) return 0;
  atomic_store(&reading[ith], 1);
  if (atomic_load(&seq) != s) { atomic_store(&reading[ith], 0); return 0; } // released or replaced meanwhile
  const size_t n = w->end - w->off < READAHEAD_BLOCK ? w->end - w->off : READAHEAD_BLOCK;
  uint64_t sum = 0;
  for (size_t k = 0; k < n; k += 64) {
    const uint8_t *q = at(&w->op, w->off + k);
    if (q) sum += *(const volatile uint8_t *)q;
  }
  __asm__ __volatile__("" ::"r"(sum));
  atomic_store(&reading[ith], 0);
  w->off += n;
  atomic_fetch_add_explicit(&bytes_read, (long)n, memory_order_relaxed);
  return 1;
}
