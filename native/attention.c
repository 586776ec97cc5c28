// Attention of T query rows over a KV cache (inference), as a flash-decoding pass: the visible
// keys of each row are cut into chunks of ATT_CHUNK positions counted from the row's first
// visible key (never by the thread count; and the same chunks wherever the cache's rows start,
// so a sliding-window layer that dropped old rows gives the bits of a full cache); each chunk
// gives a partial softmax (its max, its exp-sum, its weighted sum of values), and a row's chunks
// are merged in ascending order. Prompts run one (row, KV head) per pool chunk and merge as they
// go; a few rows over a long cache (decode) run one (row, chunk of positions) per pool chunk,
// every KV head of it (block by block of positions, so the chunk's rows are read as one stream),
// so that even 3 KV heads keep every thread busy, and merge afterwards.
// Both do the same arithmetic in the same order: the same bits either way and for any thread
// count. Bodies in attention_impl.h, compiled portable, AVX2 and AVX-512; the AVX2 and AVX-512
// passes give the same bits (the portable one sums scores in another order).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif
#include "toy.h"

#define ATT_CHUNK 128
// Below this much work (rows × KV heads × keys × head size) the (row, KV head) items run on the
// calling thread alone. 32768 kept decode attention over SmolLM2's 3 KV heads on one thread up to
// 170 cached positions: at ~100 a layer took 15–18 µs with 2 threads; handing the heads to both
// threads from 43 positions on took it to 12–13 (Ice Lake, 2026-12-07, per-kernel times inside
// decode). Who computes an item changes no bits.
#ifndef ATT_SERIAL_WORK
#define ATT_SERIAL_WORK 8192
#endif

typedef struct {
  const float *q; const uint8_t *k, *v; int type; int64_t rowBytes, headBytes;
  int64_t T, pos0, nKeys, nHeads, nKV, headDim; float scale, softcap; int64_t window; int causal;
  float *out;
  int64_t nChunks; float *parts;
} att_t;

/** The keys query row t sees: [first, last] (empty when last < first). */
static inline void att_range(const att_t *a, int64_t t, int64_t *first, int64_t *last) {
  const int64_t p = a->pos0 + t;
  *last = a->causal ? (p < a->nKeys - 1 ? p : a->nKeys - 1) : a->nKeys - 1;
  *first = a->window > 0 ? (p - a->window + 1 > 0 ? p - a->window + 1 : 0) : 0;
}

/** out[t, h] = O / S of a merged run (zeros for a row that sees no key). */
static inline void att_finish(const att_t *a, int64_t t, int64_t h, const float *run) {
  float *o = a->out + (t * a->nHeads + h) * a->headDim;
  if (run[1] == 0.0f) { memset(o, 0, a->headDim * sizeof(float)); return; }
  for (int64_t i = 0; i < a->headDim; i++) o[i] = run[2 + i] / run[1];
}

/** Several sequences in one call: segs[s] is one sequence's att_t; its items are numbered
 *  first[s] .. first[s + 1] − 1 of the batch's. */
typedef struct { const att_t *segs; const int64_t *first; int64_t nSeg; } attb_t;

/** The segment that batch item `item` belongs to (binary search over first[]). */
static inline int64_t attb_segment(const attb_t *b, int64_t item) {
  int64_t lo = 0, hi = b->nSeg - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (b->first[mid] <= item) lo = mid; else hi = mid - 1;
  }
  return lo;
}

#define IMPL_HEADER "attention_impl.h"
#include "isa_variants.h"

// A third pass with 16-lane vectors (F16 → F32 by _mm512_cvtph_ps) where the CPU has AVX-512F.
#if HAVE_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f")
#define IMPL_AVX2 1
#define IMPL_AVX512 1
#define NAME(f) f##_avx512
#include IMPL_HEADER
#undef IMPL_AVX2
#undef IMPL_AVX512
#undef NAME
#pragma GCC pop_options
#define PICK_ATT(f) (toy_has_avx512 ? f##_avx512 : PICK(f))
#else
#define PICK_ATT(f) PICK(f)
#endif

/** Bytes of one cached row of n values of a KV-cache type (0: not a cache type / bad width). */
size_t kv_row_bytes(int type, int64_t n) {
  switch (type) {
    case T_F32: return (size_t)n * 4;
    case T_F16: return (size_t)n * 2;
    case T_Q8_0: return n % 32 == 0 ? (size_t)(n / 32) * 34 : 0;
    default: return 0;
  }
}

void k_kv_store(const float *x, int64_t n, int type, uint8_t *dst) { PICK(kv_store)(x, n, type, dst); }

// Rows at most this many take the split-over-positions path, while their partial results fit in
// SPLIT_MAX_BYTES (either path gives the same bits; this only bounds the memory).
#define SPLIT_ROWS 16
#define SPLIT_MAX_BYTES ((size_t)32 << 20)

// The split path's partial results, kept between calls (kernels run one at a time: the addon's lock).
static float *split_parts(size_t need) {
  static float *parts = NULL;
  static size_t cap = 0;
  if (need > cap) {
    free(parts);
    parts = malloc(need);
    cap = parts ? need : 0;
  }
  return parts; // NULL: the whole-row path runs instead (same bits)
}

void k_attention(const float *q, const uint8_t *k, const uint8_t *v, int type, int64_t T, int64_t pos0, int64_t nKeys, int64_t nHeads,
                 int64_t nKV, int64_t headDim, float scale, float softcap, int64_t window, int causal, float *out) {
  att_t a = { q, k, v, type, (int64_t)kv_row_bytes(type, nKV * headDim), (int64_t)kv_row_bytes(type, headDim),
              T, pos0, nKeys, nHeads, nKV, headDim, scale, softcap, window, causal, out, 0, NULL };
  // The most chunks any row has: rows see at most nKeys keys (or window keys).
  const int64_t span = window > 0 && window < nKeys ? window : nKeys;
  const int64_t nChunks = (span + ATT_CHUNK - 1) / ATT_CHUNK;
  const int64_t stride = headDim + 2;
  const size_t need = (size_t)(T * nChunks * nHeads * stride) * sizeof(float);
  float *parts = T <= SPLIT_ROWS && nChunks > 1 && need <= SPLIT_MAX_BYTES ? split_parts(need) : NULL;
  if (parts) {
    a.nChunks = nChunks; a.parts = parts;
    pool_for(PICK_ATT(att_chunks), &a, T * nChunks);
    // Merge each row's chunks in ascending order, as the whole-row path does.
    float *run = pool_scratch(0, 1, (size_t)stride * sizeof(float));
    for (int64_t t = 0; t < T; t++)
      for (int64_t h = 0; h < nHeads; h++) {
        run[1] = 0.0f;
        for (int64_t c = 0; c < nChunks; c++) PICK_ATT(att_merge)(run, parts + ((t * nChunks + c) * nHeads + h) * stride, headDim);
        att_finish(&a, t, h, run);
      }
    return;
  }
  const int64_t items = T * nKV;
  if (items * nKeys * headDim < ATT_SERIAL_WORK) for (int64_t i = 0; i < items; i++) PICK_ATT(att_rows)(&a, i, 0);
  else pool_for(PICK_ATT(att_rows), &a, items);
}

// A growing buffer kept between calls (kernels run one at a time: the addon's lock).
static void *batch_buffer(void **buf, size_t *cap, size_t need) {
  if (need > *cap) {
    free(*buf);
    *buf = malloc(need);
    *cap = *buf ? need : 0;
  }
  return *buf;
}

// Attention of several sequences' rows, each over its own cache, in one call (a server's batch
// of one decode row per conversation plus prompt chunks): one pool job for all of them instead
// of one per sequence. Each (row, KV head) — or (row, chunk of positions, every KV head) — is
// computed by the one-sequence code above on that sequence's att_t, and chunks merge in
// ascending order, so a row gets the bits k_attention gives it alone, whatever the others.
int k_attention_batch(const float *q, int type, int64_t nSeg, const toy_att_seg_t *segs, int64_t nHeads, int64_t nKV, int64_t headDim,
                      float scale, float softcap, int64_t window, int causal, float *out) {
  static void *segBuf = NULL, *firstBuf = NULL;
  static size_t segCap = 0, firstCap = 0;
  if (nSeg <= 0) return 1;
  att_t *a = batch_buffer(&segBuf, &segCap, (size_t)nSeg * sizeof(att_t));
  int64_t *first = batch_buffer(&firstBuf, &firstCap, (size_t)(nSeg + 1) * sizeof(int64_t));
  if (!a || !first) return 0;
  const int64_t stride = headDim + 2, rowBytes = (int64_t)kv_row_bytes(type, nKV * headDim);
  int64_t rowItems = 0, chunkItems = 0, work = 0, maxChunks = 0;
  for (int64_t s = 0; s < nSeg; s++) {
    const toy_att_seg_t *sg = &segs[s];
    const int64_t off = sg->start * nHeads * headDim;
    const att_t one = { q + off, sg->k, sg->v, type, rowBytes, (int64_t)kv_row_bytes(type, headDim),
                        sg->T, sg->pos0, sg->nKeys, nHeads, nKV, headDim, scale, softcap, window, causal, out + off, 0, NULL };
    a[s] = one;
    const int64_t span = window > 0 && window < sg->nKeys ? window : sg->nKeys;
    a[s].nChunks = span > 0 ? (span + ATT_CHUNK - 1) / ATT_CHUNK : 1;
    if (a[s].nChunks > maxChunks) maxChunks = a[s].nChunks;
    rowItems += sg->T * nKV;
    chunkItems += sg->T * a[s].nChunks;
    work += sg->T * nKV * sg->nKeys * headDim;
  }
  // Few rows over long caches: split them over positions too, so that every thread has work
  // (either way gives the same bits; this only decides how the work is cut).
  const size_t need = (size_t)(chunkItems * nHeads * stride) * sizeof(float);
  float *parts = maxChunks > 1 && rowItems < 8 * (int64_t)pool_threads() && need <= SPLIT_MAX_BYTES ? split_parts(need) : NULL;
  attb_t b = { a, first, nSeg };
  int64_t n = 0;
  for (int64_t s = 0; s < nSeg; s++) {
    first[s] = n;
    if (parts) { a[s].parts = parts + n * nHeads * stride; n += a[s].T * a[s].nChunks; }
    else n += a[s].T * nKV;
  }
  first[nSeg] = n;
  const toy_chunk_fn fn = parts ? PICK_ATT(attb_chunks) : PICK_ATT(attb_rows);
  if (work < 32768) for (int64_t i = 0; i < n; i++) fn(&b, i, 0);
  else pool_for(fn, &b, n);
  if (!parts) return 1;
  // Merge each row's chunks in ascending order, as the whole-row path does.
  float *run = pool_scratch(0, 1, (size_t)stride * sizeof(float));
  for (int64_t s = 0; s < nSeg; s++)
    for (int64_t t = 0; t < a[s].T; t++)
      for (int64_t h = 0; h < nHeads; h++) {
        run[1] = 0.0f;
        for (int64_t c = 0; c < a[s].nChunks; c++) PICK_ATT(att_merge)(run, a[s].parts + ((t * a[s].nChunks + c) * nHeads + h) * stride, headDim);
        att_finish(&a[s], t, h, run);
      }
  return 1;
}
