// matmul and getRows over stored (possibly quantized) weights. See matmul_impl.h for the math.
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
#include "quants.h"

enum { KIND_F, KIND_U, KIND_US, KIND_S, KIND_BF };
enum { XQ_Q8_0, XQ_Q8_1, XQ_Q8K, XQ_BF16 }; // how activations are quantized (llama.cpp's vec_dot_type)
#define ROW_BLOCK 16 // weight rows decoded together, then multiplied with every activation row

typedef struct { uint8_t *q; int16_t *sc; float *D; float *M; float *f; } wrow_t;
// An activation row quantized in blocks of 32 (Q8_0 and Q8_1 schemes): codes q, scales dx, the
// float sums fs of each half block (or block), and sx, the exact integer sum of each block's codes
// (NULL unless mm_t.xsums: Q4_0's kernels read it).
typedef struct {
  int8_t *q; float *dx; float *fs; int32_t *sx;
  const int32_t *nk; // the VNNI signed kernels' −k·Σx lanes per block (vnni_chunk fills it; NULL elsewhere)
} xrow_t;
typedef struct {
  const float *x; const uint8_t *w; int type, kind, xscheme; int64_t rows, cols, T; size_t rb;
  float *out; uint8_t *xq; size_t xstride;
  int packed; // w is vnni_repack's layout (eight-row groups block-interleaved)
  int xsums;  // the quantized activation rows hold their integer block sums (xrow_t.sx)
} mm_t;

// k_repack's layout splits the blocks of the quantized types, whose eight-row kernels read fields
// of eight rows at once: a step (block u of a group's eight rows, eight blocks' bytes) holds each
// field of the eight blocks side by side, in the block's order: the eight scales d, then (Q4_1,
// Q5_1) the eight mins, (Q5_0, Q5_1) the eight fifth-bit words, then the eight rows' quants. A
// field at offset o of a block, s bytes long, is at 8·o + i·s in the step for row i. The kernels
// then load the eight scales at once, and the quants of rows 0–3 (4–7) of a 4-bit type, or of
// rows 2p and 2p + 1 of Q8_0, as one 64-byte register, where whole blocks ([d0 q0][d1 q1] …)
// cost eight scalar loads and an insert per pair of rows (vecdot_vnni.h). The K-quants' quants
// are fields of 16 bytes (a 64-byte register: one field of rows 0–3), and their packed scales
// fields the kernels unpack for eight rows at once.

/** The field sizes of a split type's block, in order (0-terminated); NULL for the other types. */
static const uint8_t *split_fields(int type) {
  static const uint8_t q4_0[] = { 2, 16, 0 }, q4_1[] = { 2, 2, 16, 0 }, q5_0[] = { 2, 4, 16, 0 }, q5_1[] = { 2, 2, 4, 16, 0 }, q8_0[] = { 2, 32, 0 };
  // K-quants: d, dmin, the three words of the packed scales, (Q5_K) qh and the quants in 16 bytes a field
  static const uint8_t q4_K[] = { 2, 2, 4, 4, 4, 16, 16, 16, 16, 16, 16, 16, 16, 0 };
  static const uint8_t q5_K[] = { 2, 2, 4, 4, 4, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 0 };
  static const uint8_t q6_K[] = { 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 2, 0 }; // 8 × ql, 4 × qh, scales, d
  switch (type) {
    case T_Q4_K: return q4_K;
    case T_Q6_K: return q6_K;
    case T_Q5_K: return q5_K;
    case T_Q4_0: return q4_0;
    case T_Q4_1: return q4_1;
    case T_Q5_0: return q5_0;
    case T_Q5_1: return q5_1;
    case T_Q8_0: return q8_0;
    default: return NULL;
  }
}

/** Row i's block (as the file stores it) into its place in a split step (fields f). */
static inline void split_put(const uint8_t *f, const uint8_t *blk, uint8_t *step, int i) {
  for (size_t o = 0; *f; o += *f++) memcpy(step + 8 * o + (size_t)i * *f, blk + o, *f);
}
/** Row i's block back out of a split step. The field sizes are few: copies of a constant size
 *  compile to single moves (the prompt kernels' transpositions gather every row this way). */
static inline void split_get(const uint8_t *f, const uint8_t *step, int i, uint8_t *blk) {
  for (size_t o = 0; *f; o += *f++) {
    const uint8_t *from = step + 8 * o + (size_t)i * *f;
    switch (*f) {
      case 2: memcpy(blk + o, from, 2); break;
      case 4: memcpy(blk + o, from, 4); break;
      case 16: memcpy(blk + o, from, 16); break;
      case 32: memcpy(blk + o, from, 32); break;
      default: memcpy(blk + o, from, *f);
    }
  }
}

static inline xrow_t xrow_at(const mm_t *m, int64_t t) {
  uint8_t *base = m->xq + t * m->xstride;
  float *dx = (float *)(base + m->cols);
  xrow_t r = { (int8_t *)base, dx, dx + m->cols / 32, m->xsums ? (int32_t *)(dx + 3 * (m->cols / 32)) : NULL, NULL };
  return r;
}

static float f16_table[65536];
static void init_f16_table(void) {
  for (int i = 0; i < 65536; i++) f16_table[i] = f16_to_f32((uint16_t)i);
}

#define IMPL_AVX2 0
#define IMPL_VNNI 0
#define NAME(f) f##_generic
#include "matmul_impl.h"
#include "vecdot_iq4.h"
#undef IMPL_AVX2
#undef NAME

#if HAVE_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "hsum_avx2.h"
#include "prefetch.h"
#define VD_ROWS 32 // weight rows per chunk of the fused matrix–vector path
#include "vecdot_avx2.h"
#define VF(f) vf_##f##_avx2
#define VF_NW 2 // 2 weight rows × 4 activation rows: 8 accumulators of AVX2's 16 registers
#include "vecdot_float.h"
#undef VF
#undef VF_NW
#define IMPL_AVX2 1
#define NAME(f) f##_avx2
#include "matmul_impl.h"
#include "vecdot_iq4.h"
#undef IMPL_AVX2
#undef NAME
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
#include "vecdot_vnni.h"
#define VF(f) vf_##f##_avx512
#define VF_NW 4 // 4 × 4 accumulators: AVX-512 has 32 vector registers
#define VF_PAIRS  // repacked rows two per 512-bit register (VF(kernel_pairs)): prompts, F32 decode
#include "vecdot_float.h"
#undef VF
#undef VF_NW
#undef VF_PAIRS
#define IMPL_AVX2 1
#define NAME(f) f##_vnni
#undef IMPL_VNNI
#define IMPL_VNNI 1
#include "matmul_impl.h"
#include "vecdot_iq4.h"
#undef IMPL_AVX2
#undef NAME
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16")
#include "vecdot_bf16.h"
#pragma GCC pop_options
#endif

void matmul_init(void) { init_f16_table(); }

static int xscheme_of(int type) {
  switch (type) {
    case T_Q4_1: case T_Q5_1: return XQ_Q8_1;
    case T_Q2_K: case T_Q3_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: return XQ_Q8K;
    case T_IQ4_XS: return XQ_Q8K; // IQ4_NL: Q8_0
    default: return XQ_Q8_0;
  }
}

static int kind_of(int type) {
  switch (type) {
    case T_F32: case T_F16: case T_BF16: return KIND_F;
    case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: return KIND_U;
    case T_Q8_0: return KIND_S;
    default: return KIND_US;
  }
}

// Decode (T ≤ 3) hands each thread one share of consecutive row blocks, cut into pieces that it
// takes front to back: each thread then reads a long stream of the weights. One-block chunks made
// two threads take turns along the matrix (a shared counter bumped 1536 times for the output
// projection, neither thread reading a long stream: 2 threads ran slower than 1); 16 equal runs
// per thread still left decode on 2 threads slower than on 1 (SmolLM2 Q4_1, 142 vs 150 t/s): the
// prefetchers restart wherever a thread jumps. A thread that finishes its share takes the other
// shares' pieces from their back ends, so a worker that starts late leaves the caller a piece,
// not its whole share. The pieces halve in size (1/2, 1/4, …, 1/32, 1/32 of a share): the one
// left at the end, which the other thread waits for, is small: with 2 threads the caller waits
// for the worker 0.5–0.7 ms of a ~25 ms SmolLM2 F32 decode step, where two equal runs per thread
// of ceil(blocks / 4) blocks (uneven shares: 10 and 8 of a 576-row weight's 18 blocks) kept it
// waiting 1.2–1.5 ms (F32 decode ~4% faster, Q4_K_M ~12%, Q4_0 the same; interleaved runs).
// Six pieces rather than four (last 1/8): 2-thread decode 0.98–1.04×, median 1.01× (replayed
// steps of ~130 jobs, Q4_0, Q8_0, Q4_K_M, F16; paired rounds, Ice Lake). Each row is still computed by the
// same code, so the bits do not change.
#define RUN_PIECES 6
typedef struct { toy_chunk_fn fn; void *m; int64_t nblocks; int threads; } run_t;

// Chunk c: piece k of thread t's share of S blocks, its blocks S − S/2^k .. S − S/2^(k+1) (the
// last piece to the end of the share).
static void run_chunk(void *p, int64_t c, int ith) {
  const run_t *s = p;
  const int64_t t = c / RUN_PIECES, k = c % RUN_PIECES;
  const int64_t b0 = s->nblocks * t / s->threads, S = s->nblocks * (t + 1) / s->threads - b0;
  const int64_t lo = b0 + S - (S >> k), hi = k + 1 == RUN_PIECES ? b0 + S : b0 + S - (S >> (k + 1));
  for (int64_t b = lo; b < hi; b++) s->fn(s->m, b, ith);
}

// pool_for hands thread t chunks [t · RUN_PIECES, (t + 1) · RUN_PIECES): its own share.
static void pool_for_runs(toy_chunk_fn fn, void *m, int64_t nblocks) {
  run_t s = { fn, m, nblocks, pool_threads() };
  pool_for(run_chunk, &s, (int64_t)s.threads * RUN_PIECES);
}

// How one weight's product is run: its chunk function, how many chunks, and how they are handed
// out. k_matmul_packed and k_matmul_multi choose it the same way, so a row's bits never depend on
// which of them computed it.
enum { RUN_SERIAL, RUN_RUNS, RUN_CHUNKS };
typedef struct { mm_t m; toy_chunk_fn fn; int64_t nchunks; int mode; } mm_plan_t;

/** The plan for one weight; m.xq is left for the caller (quantize_x). */
static void mm_plan(mm_plan_t *p, const float *x, const uint8_t *w, int type, int64_t rows, int64_t cols, int64_t T, float *out, int packed) {
  mm_t m = { x, w, type, kind_of(type), xscheme_of(type), rows, cols, T, row_bytes(type, cols), out, NULL, 0, packed };
  p->m = m;
  const int small = rows * cols * T < 32768;
  // IQ4_NL / IQ4_XS: their own kernels for every T (vecdot_iq4.h)
  if (type == T_IQ4_NL || type == T_IQ4_XS) {
#if HAVE_X86
    p->fn = toy_has_vnni ? iq4_chunk_vnni : toy_has_avx2 ? iq4_chunk_avx2 : iq4_chunk_generic;
#else
    p->fn = iq4_chunk_generic;
#endif
    p->nchunks = (rows + IQ4_ROWS - 1) / IQ4_ROWS;
    p->mode = small ? RUN_SERIAL : RUN_RUNS;
    return;
  }
#if HAVE_X86
  if (toy_has_bf16 && type == T_BF16) { // bf16 activations, vdpbf16ps (vecdot_bf16.h)
    p->m.kind = KIND_BF;
    p->m.xscheme = XQ_BF16;
    p->fn = bf_chunk;
    p->nchunks = (rows + VD_ROWS - 1) / VD_ROWS;
    p->mode = small ? RUN_SERIAL : T <= 3 ? RUN_RUNS : RUN_CHUNKS;
    return;
  }
  const int avx2 = toy_has_avx2;
  // Types with fused kernels take them for every T: weight blocks read in place, and each output
  // summed in the same order whatever T (batch invariance), llama.cpp's (vec_dot's; for Q4_0 its
  // repacked kernels', vecdot_avx2.h).
  if (avx2 && vd_for(type).x1) {
    // Eight rows read side by side, as the VNNI kernels do, ran at a third of the bandwidth on
    // weights that come from memory (Zen 4; the prefetch hints then tried had been compiled out,
    // prefetch.h, so that is untested with them): decode on the file's row-major layout streams
    // one row at a time (vd_chunk); repacked weights (one stream for eight rows) and prompts
    // (each row reused from cache for many activation rows) take the eight-row VNNI kernels.
    // Same bits either way.
    const int vnni = toy_has_vnni && vnni_for(type, 1).x1;
    p->fn = vnni && (packed || T > 3) ? vnni_chunk : vd_chunk;
    p->nchunks = (rows + VD_ROWS - 1) / VD_ROWS;
    p->mode = small ? RUN_SERIAL : T <= 3 ? RUN_RUNS : RUN_CHUNKS;
    return;
  }
  if (avx2 && p->m.kind == KIND_F) { // float weights read in place, dotf's order (same bits as below)
    p->fn = toy_has_vnni ? vf_chunk_avx512 : vf_chunk_avx2;
    p->nchunks = (rows + VD_ROWS - 1) / VD_ROWS;
    p->mode = small ? RUN_SERIAL : T <= 3 ? RUN_RUNS : RUN_CHUNKS;
    return;
  }
  p->fn = toy_has_vnni ? matmul_chunk_vnni : avx2 ? matmul_chunk_avx2 : matmul_chunk_generic;
#else
  p->fn = matmul_chunk_generic;
#endif
  p->nchunks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
  p->mode = small ? RUN_SERIAL : RUN_CHUNKS;
}

/** The activation rows quantized for plans[0..n) into scratch slot 3: once per scheme among
 *  them (llama.cpp's vec_dot_type of each weight: 8-bit blocks, or bf16 for BF16 weights on the
 *  vdpbf16ps path), which every plan of that scheme reads (same cols); nothing for the other
 *  float weights. So one job can hold a layer's q, k, v of different types (a Q5_K_M file's
 *  Q5_1 q and k with a Q8_0 v), each product reading what it would read alone. */
static void quantize_x(mm_plan_t *plans, int n) {
  int lead[TOY_MM_MULTI_MAX], group[TOY_MM_MULTI_MAX], groups = 0;
  size_t at[TOY_MM_MULTI_MAX], total = 0;
  for (int i = 0; i < n; i++) {
    group[i] = -1;
    if (plans[i].m.kind == KIND_F) continue;
    for (int g = 0; g < groups && group[i] < 0; g++) if (plans[lead[g]].m.xscheme == plans[i].m.xscheme) group[i] = g;
    if (group[i] < 0) { lead[groups] = i; group[i] = groups++; }
  }
  for (int g = 0; g < groups; g++) {
    mm_t *m = &plans[lead[g]].m;
    const int64_t nu = m->cols / 32;
    // The integer block sums (xrow_t.sx) only where a Q4_0 weight reads them: a wider row slowed
    // the other types' prompt products by 3–6% (Ice Lake, paired rounds).
    m->xsums = 0;
    for (int i = 0; i < n; i++) m->xsums |= group[i] == g && plans[i].m.type == T_Q4_0;
    m->xstride = m->xscheme == XQ_BF16 ? (2 * m->cols + 63) & ~(size_t)63 : (m->cols + (m->xsums ? 16 : 12) * nu + 63) & ~(size_t)63;
    at[g] = total;
    total += m->xstride * m->T;
  }
  if (!groups) return;
  uint8_t *xq = pool_scratch(0, 3, total);
  for (int g = 0; g < groups; g++) {
    mm_t *m = &plans[lead[g]].m;
#if HAVE_X86
    toy_chunk_fn quantize = m->xscheme == XQ_BF16 ? bf16_round_chunk : toy_has_avx2 ? quantize_chunk_avx2 : quantize_chunk_generic;
#else
    toy_chunk_fn quantize = quantize_chunk_generic;
#endif
    m->xq = xq + at[g];
    if (m->T * m->cols < 16384) for (int64_t t = 0; t < m->T; t++) quantize(m, t, 0);
    else pool_for(quantize, m, m->T);
  }
  for (int i = 0; i < n; i++) {
    if (group[i] < 0) continue;
    const mm_t *m = &plans[lead[group[i]]].m;
    plans[i].m.xq = m->xq; plans[i].m.xstride = m->xstride; plans[i].m.xsums = m->xsums;
  }
}

void k_matmul_packed(const float *x, const uint8_t *w, int type, int64_t rows, int64_t cols, int64_t T, float *out, int packed) {
  if (T <= 0 || rows <= 0) return;
  mm_plan_t p;
  mm_plan(&p, x, w, type, rows, cols, T, out, packed);
  quantize_x(&p, 1);
  if (p.mode == RUN_SERIAL) for (int64_t b = 0; b < p.nchunks; b++) p.fn(&p.m, b, 0);
  else if (p.mode == RUN_RUNS) pool_for_runs(p.fn, &p.m, p.nchunks);
  else pool_for(p.fn, &p.m, p.nchunks);
}

// Several weights times the same activations as one pool job (a layer's q, k, v projections, or
// its gate and up): one wake-up and one join instead of one per weight, and the activations
// quantized once. The job's chunks are each weight's chunks one after the other; each chunk runs
// the function k_matmul_packed would give it, so every output has the same bits as there.
typedef struct { mm_plan_t *plans; int n; } multi_t;

static void multi_chunk(void *p, int64_t c, int ith) {
  const multi_t *j = p;
  int i = 0;
  while (c >= j->plans[i].nchunks) c -= j->plans[i++].nchunks;
  j->plans[i].fn(&j->plans[i].m, c, ith);
}

int k_matmul_multi(const float *x, int n, const toy_mm_weight_t *ws, int64_t cols, int64_t T) {
  if (n <= 0 || n > TOY_MM_MULTI_MAX) return 0;
  if (T <= 0) return 1;
  mm_plan_t plans[TOY_MM_MULTI_MAX];
  int64_t total = 0, work = 0;
  int chunks = 0;
  for (int i = 0; i < n; i++) {
    mm_plan(&plans[i], x, ws[i].w, ws[i].type, ws[i].rows, cols, T, ws[i].out, ws[i].packed);
    total += plans[i].nchunks;
    work += ws[i].rows * cols * T;
    chunks += plans[i].mode == RUN_CHUNKS;
  }
  quantize_x(plans, n);
  multi_t j = { plans, n };
  if (work < 32768) for (int64_t c = 0; c < total; c++) multi_chunk(&j, c, 0);
  else if (chunks == 0) pool_for_runs(multi_chunk, &j, total); // decode: long runs of rows per thread
  else pool_for(multi_chunk, &j, total);
  return 1;
}

void k_matmul(const float *x, const uint8_t *w, int type, int64_t rows, int64_t cols, int64_t T, float *out) {
  k_matmul_packed(x, w, type, rows, cols, T, out, 0);
}

// The repacked layout for the eight-row VNNI kernels: each whole group of eight rows keeps its
// bytes (the same size and place as in the file) but stores its blocks interleaved, block u of
// rows 0..7, then block u + 1 of rows 0..7, …, so that decoding reads one sequential stream
// instead of eight side by side. Rows past the last whole group stay as they are. Returns 0 (and
// writes nothing) when this CPU and type have no such kernels: the caller keeps the file's bytes.
// The bytes of one interleaved block of k_repack's layout for this type and row length, or 0 when
// this CPU and type have no such kernels (the weight stays as in the file).
static size_t repack_block_bytes(int type, int64_t cols, int64_t rows) {
#if HAVE_X86
  // BF16 on the vdpbf16ps path in blocks of 32 values (vecdot_bf16.h; other widths stay as in the
  // file); F16 and BF16 otherwise in blocks of eight values, for the float kernels (vecdot_float.h).
  if (type == T_BF16 && toy_has_bf16) return cols % 32 == 0 && rows >= VNNI_ROWS ? 64 : 0;
  // F32 (a file's weights only, addon.c js_repack) likewise in blocks of eight values.
  const int flt = (type == T_F32 || type == T_F16 || type == T_BF16) && cols % 8 == 0;
  // Without VNNI, Q4_0 alone: its order is that of eight rows side by side (vd_q4_0_8_n).
  if (!toy_has_vnni) return toy_has_avx2 && type == T_Q4_0 && rows >= VNNI_ROWS ? vnni_block_bytes(type) : 0;
  if (!(vnni_for(type, 1).x1 || flt) || rows < VNNI_ROWS) return 0;
  return flt ? (type == T_F32 ? 32 : 16) : vnni_block_bytes(type);
#else
  (void)type; (void)cols; (void)rows;
  return 0;
#endif
}

int k_repack(const uint8_t *w, int type, int64_t rows, int64_t cols, uint8_t *dst) {
  const size_t bs = repack_block_bytes(type, cols, rows);
  if (!bs) return 0;
  const size_t rb = row_bytes(type, cols), nb = rb / bs;
  const int64_t groups = rows / VNNI_ROWS;
  const uint8_t *fields = split_fields(type);
  for (int64_t g = 0; g < groups; g++) {
    const uint8_t *src = w + g * VNNI_ROWS * rb;
    uint8_t *d = dst + g * VNNI_ROWS * rb;
    for (size_t u = 0; u < nb; u++)
      for (int i = 0; i < VNNI_ROWS; i++) {
        const uint8_t *blk = src + i * rb + u * bs;
        if (fields) split_put(fields, blk, d + u * VNNI_ROWS * bs, i);
        else memcpy(d + (u * VNNI_ROWS + i) * bs, blk, bs);
      }
  }
  memcpy(dst + groups * VNNI_ROWS * rb, w + groups * VNNI_ROWS * rb, (size_t)(rows - groups * VNNI_ROWS) * rb);
  return 1;
}

// Row r of a weight in k_repack's layout, as the file stores it: its blocks gathered from the
// interleaved group (a row past the last whole group is where the file has it).
static const uint8_t *unpacked_row(const uint8_t *w, int type, int64_t rows, int64_t cols, int64_t r, uint8_t *tmp) {
  const size_t rb = row_bytes(type, cols), bs = repack_block_bytes(type, cols, rows);
  if (!bs || r >= rows / VNNI_ROWS * VNNI_ROWS) return w + r * rb;
  const uint8_t *group = w + (r / VNNI_ROWS) * VNNI_ROWS * rb;
  const int i = (int)(r % VNNI_ROWS);
  const uint8_t *fields = split_fields(type);
  for (size_t u = 0; u < rb / bs; u++) {
    if (fields) split_get(fields, group + u * VNNI_ROWS * bs, i, tmp + u * bs);
    else memcpy(tmp + u * bs, group + (u * VNNI_ROWS + i) * bs, bs);
  }
  return tmp;
}

typedef struct { const uint8_t *w; int type; int64_t rows, cols; size_t rb; const int32_t *ids; int64_t n; float *out; int packed; } gr_t;

static void get_rows_chunk(void *p, int64_t i, int ith) {
  const gr_t *g = p;
  const uint8_t *row = g->packed ? unpacked_row(g->w, g->type, g->rows, g->cols, g->ids[i], pool_scratch(ith, 0, g->rb))
                                 : g->w + (int64_t)g->ids[i] * g->rb;
  dequantize_row(g->type, row, g->out + i * g->cols, g->cols);
}

// Rows ids of w (packed: in k_repack's layout, so that a tied embedding, repacked for the output
// product, is read from that copy and its file pages stay dropped).
void k_get_rows(const uint8_t *w, int type, int64_t rows, int64_t cols, const int32_t *ids, int64_t n, float *out, int packed) {
  gr_t g = { w, type, rows, cols, row_bytes(type, cols), ids, n, out, packed };
  if (n * cols < 65536) for (int64_t i = 0; i < n; i++) get_rows_chunk(&g, i, 0);
  else pool_for(get_rows_chunk, &g, n);
}
