// toy native cpu backend: shared declarations.
#ifndef TOY_H
#define TOY_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#define TOY_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TOY_INLINE static inline __attribute__((always_inline))

// ggml type ids (ggml.h).
enum {
  T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8,
  T_Q2_K = 10, T_Q3_K = 11, T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_BF16 = 30,
  T_IQ4_NL = 20, T_IQ4_XS = 23, // kernels: vecdot_iq4.h
};

// --- cpu features (set once at load) ---
extern int toy_has_avx2; // avx2 + fma + f16c
extern int toy_has_avx512; // avx512f (and avx2): the training GEMM's widest kernel
extern int toy_has_vnni;   // avx512 f/bw/dq/vl + vnni (and avx2): the fused decode kernels' widest path
extern int toy_has_bf16;   // vnni + avx512bf16: BF16 weights times bf16 activations (vecdot_bf16.h)
extern int toy_kv_l2;      // decode attention prefetches cached rows into L2 (1) or L1 (0): attention_impl.h

// --- thread pool (pool.c) ---
/** fn(ctx, chunk, ith): compute one chunk; ith (< pool size) names the thread, for scratch memory. */
typedef void (*toy_chunk_fn)(void *ctx, int64_t chunk, int ith);
void pool_init(int nthreads);
int pool_threads(void);
void pool_set_threads(int n);
/** Runs fn for every chunk < nchunks on the pool's threads; returns when all are done. */
void pool_for(toy_chunk_fn fn, void *ctx, int64_t nchunks);
/** Per-thread scratch memory (64-byte aligned, grows, kept between calls). slot < 4. */
void *pool_scratch(int ith, int slot, size_t bytes);
/** TOY_POOL_STATS: a kernel call's start (0 when off), and its end (counted in the report). */
long pool_stats_begin(void);
void pool_stats_call(long t0);

// --- quantized types (quants.c) ---
/** Bytes of one row of `cols` values of `type`; 0 when the type is unknown or cols is not a multiple of its block. */
size_t row_bytes(int type, int64_t cols);
int type_supported(int type);
void dequantize_row(int type, const void *row, float *out, int64_t cols);

// --- kernels ---
void k_matmul(const float *x, const uint8_t *w, int type, int64_t rows, int64_t cols, int64_t T, float *out);
/** k_matmul on weights in k_repack's layout when packed is 1 (same results). */
void k_matmul_packed(const float *x, const uint8_t *w, int type, int64_t rows, int64_t cols, int64_t T, float *out, int packed);
/** One weight of k_matmul_multi: rows × cols as stored (packed: k_repack's layout), out [T, rows]. */
typedef struct { const uint8_t *w; int type; int packed; int64_t rows; float *out; } toy_mm_weight_t;
#define TOY_MM_MULTI_MAX 4
/** k_matmul_packed of the same x [T, cols] with each of n weights, as one pool job (same results).
 *  Returns 0 (nothing computed) when their activations are quantized differently; call each alone. */
int k_matmul_multi(const float *x, int n, const toy_mm_weight_t *ws, int64_t cols, int64_t T);

// --- a decode step recorded and replayed (plan.c) ---
enum { OP_MATMUL, OP_MULTI, OP_GET_ROWS, OP_RMS_NORM, OP_ADD_RMS_NORM, OP_LAYER_NORM, OP_ROPE_PAIR, OP_ROPE, OP_KV_PAIR,
       OP_ATTENTION, OP_SWIGLU, OP_GEGLU, OP_ADD, OP_GELU, OP_SOFTMAX, OP_SCALE, OP_ATTENTION_BATCH };
#define TOY_PLAN_PTRS 5
/** One recorded kernel call: its pointers, integers and floats in the order plan_run reads them
 *  (addon.c's record sites fill them); layer: the KV-cache layer it is bound to (-1: none);
 *  segs / segLayer: an attentionBatch's sequences and the layer each is bound to (plan_bind_segs). */
typedef struct {
  int op, layer; void *p[TOY_PLAN_PTRS]; int64_t i[9]; float f[2]; double d; toy_mm_weight_t ws[TOY_MM_MULTI_MAX];
  struct toy_att_seg *segs; int *segLayer;
} toy_plan_cmd_t;
typedef struct toy_plan toy_plan_t;
/** The plan being recorded (NULL: none): addon.c adds each kernel call it runs. */
extern _Thread_local toy_plan_t *toy_recording;
/** A plan for a cache of nLayers layers (keys[l], values[l] their memory); rowBytes and rows stay the caller's. */
toy_plan_t *plan_begin(int nLayers, const uint8_t **keys, const uint8_t **values, const double *rowBytes, const int32_t *rows);
void plan_free(toy_plan_t *p);
/** A new call at the end of p (NULL when p cannot be replayed). */
toy_plan_cmd_t *plan_add(toy_plan_t *p, int op);
/** Bind a storeKVPair or attention call to its layer (p[2], p[3]: its keys and values). */
void plan_bind_kv(toy_plan_t *p, toy_plan_cmd_t *c);
/** Bind an attentionBatch call (i[0] sequences in segs, copied) to each sequence's layer. */
void plan_bind_segs(toy_plan_t *p, toy_plan_cmd_t *c, const struct toy_att_seg *segs);
/** Mark p as not replayable (the first reason stays). */
void plan_refuse(toy_plan_t *p, const char *why);
const char *plan_invalid(const toy_plan_t *p);
/** Where the step's output (its logits, n floats) goes: the first call names the array the
 *  recorded forward wrote it to, each later one moves it to `out`. 0: n is not the output's length. */
int plan_output(toy_plan_t *p, float *out, size_t n);
/** Every recorded call again, in order (the caller holds the kernels' lock). */
void plan_run(const toy_plan_t *p);

// --- readahead of the next product's weights by waiting workers (readahead.c) ---
/** Memory that may be read ahead (a file mapping, a repacked copy) until readahead_unregister(p). */
void readahead_init(void); // reads TOY_READAHEAD
void readahead_register(const void *p, size_t len);
void readahead_unregister(const void *p);
/** Called before a product of the weights p[0..n) (len bytes each): learns and publishes the hint. */
void readahead_before(const uint8_t *const *p, const size_t *len, int n);
/** One block of worker ith's readahead (of nthreads); 0 when there is nothing to read. */
int readahead_step(int ith, int nthreads);
long readahead_bytes(void); // read ahead so far (TOY_POOL_STATS)
/** Writes w (rows × row_bytes) in the layout the widest kernels stream best to dst (same size);
 *  returns 0 and writes nothing when this CPU and type have none. */
int k_repack(const uint8_t *w, int type, int64_t rows, int64_t cols, uint8_t *dst);
void k_get_rows(const uint8_t *w, int type, int64_t rows, int64_t cols, const int32_t *ids, int64_t n, float *out, int packed);
void k_rms_norm(const float *x, const float *w, int64_t rows, int64_t n, float eps, float *out);
void k_layer_norm(const float *x, const float *w, const float *b, int64_t rows, int64_t n, float eps, float *out);
void k_rope(float *x, int64_t T, int64_t nHeads, int64_t headDim, int64_t ropeDims, const int32_t *pos, const float *invFreq, int neox);
/** Attention of T queries over a KV cache whose K and V rows (nKV · headDim values) are stored as
 *  `type` (T_F32, T_F16 or T_Q8_0); attention.c. */
void k_attention(const float *q, const uint8_t *k, const uint8_t *v, int type, int64_t T, int64_t pos0, int64_t nKeys, int64_t nHeads,
                 int64_t nKV, int64_t headDim, float scale, float softcap, int64_t window, int causal, float *out);
/** One sequence of a batched attention call: its rows [start, start + T) of q and out, at
 *  positions pos0.. over the first nKeys rows of its own cache k, v. */
typedef struct toy_att_seg { const uint8_t *k, *v; int64_t start, T, pos0, nKeys; } toy_att_seg_t;
/** k_attention for each of nSeg sequences in one call (one pool job; each row gets the bits
 *  k_attention gives it). Returns 0 when out of memory (nothing written). */
int k_attention_batch(const float *q, int type, int64_t nSeg, const toy_att_seg_t *segs, int64_t nHeads, int64_t nKV, int64_t headDim,
                      float scale, float softcap, int64_t window, int causal, float *out);
/** n floats (whole rows) written as KV-cache type `type` into dst (ggml's F16 / Q8_0 encoders). */
void k_kv_store(const float *x, int64_t n, int type, uint8_t *dst);
/** Bytes of one KV-cache row of n values of `type` (0: not a KV-cache type, or n not a whole number of blocks). */
size_t kv_row_bytes(int type, int64_t n);
void k_swiglu(const float *g, const float *u, float *out, int64_t n);
void k_geglu(const float *g, const float *u, float *out, int64_t n);
void k_gelu(const float *x, float *out, int64_t n);
void k_add(const float *a, const float *b, float *out, int64_t n);
void k_softmax(float *x, int64_t rows, int64_t n);
/** The index of the first largest of x[0..n) (NaN never wins; a NaN x[0] is the answer); −1 when n is 0. */
int64_t k_argmax(const float *x, int64_t n);
/** The heap of engines/sampling.ts topIds (0 < k ≤ n): heap[0..k) = the k best indices, in that function's heap order. */
void k_topk_heap(const float *x, int64_t n, int64_t k, int32_t *heap);

// --- training: float32 GEMM (gemm.c) and attention with its backward (attention_train.c) ---
/** C (+)= op(A) · op(B): op(A) is M × K, op(B) is K × N, C is M × N (row stride ldc).
 *  op(A)[i][k] = transA ? A[k·lda + i] : A[i·lda + k]; likewise op(B)[k][j] with ldb. */
typedef struct {
  int64_t M, N, K;
  const float *A; int64_t lda; int transA;
  const float *B; int64_t ldb; int transB;
  float *C; int64_t ldc;
  int accumulate; // 1: C += product, 0: C = product
  int lower;      // 1: only C[i][j] with j <= i is wanted; register blocks wholly above the diagonal are skipped (left unwritten)
} toy_gemm_t;
/** On the pool's threads. */
void k_gemm(const toy_gemm_t *g);
/** On the calling thread (inside a pool chunk), with thread ith's pack buffers (scratch slots 2, 3). */
void gemm_serial(const toy_gemm_t *g, int ith);

typedef struct {
  int64_t B, T, H, KV, D; // sequences, rows per sequence, heads, KV heads, head size
  float scale, softcap;
  int64_t window;         // 0: unlimited
  int causal;
} toy_attn_shape_t;
/** out [B·T, H·D] and probs [B, H, T, T] (the softmax, kept for the backward) from
 *  q [B·T, H, D], k, v [B·T, KV, D]. */
void k_attention_train(const toy_attn_shape_t *s, const float *q, const float *k, const float *v, float *out, float *probs);
/** dq, dk, dv += the gradients of attention at ∂out = dout. */
void k_attention_train_backward(const toy_attn_shape_t *s, const float *q, const float *k, const float *v, const float *probs,
                                const float *dout, float *dq, float *dk, float *dv);

// --- training: the O(tokens · d) ops (train_ops.c); gradients are added (+=), NULL: not wanted ---
/** act 0: SiLU, 1: GELU (tanh).  ∂gate += act'(gate) up ∂y,  ∂up += act(gate) ∂y. */
void k_gated_backward(int act, const float *gate, const float *up, const float *dy, float *dgate, float *dup, int64_t n);
/** RMSNorm over rows of n (r recomputed from x): ∂x and ∂g. Returns 0 when out of memory. */
int k_rms_norm_backward(const float *dy, const float *x, const float *g, int64_t rows, int64_t n, float eps, float *dx, float *dg);
/** RoPE over y [N, heads, headDim] (the forward's output): ∂x and ∂invFreq. Returns 0 on a bad size or no memory. */
int k_rope_backward(const float *dy, const float *y, int64_t N, int64_t heads, int64_t headDim, int64_t dims, const int32_t *pos,
                    const float *invFreq, int neox, float *dx, float *dinv);
/** lse[t] = log Σ exp z_t for scored rows; returns Σ (lse[t] − z_t[target_t]). */
double k_cross_entropy(const float *z, const int32_t *target, int64_t N, int64_t V, int32_t ignore, double *lse);
/** ∂z_t += g (softmax(z_t) − onehot(target_t)) for scored rows. */
void k_cross_entropy_backward(const float *z, const int32_t *target, const double *lse, int64_t N, int64_t V, int32_t ignore, float g, float *dz);
/** One AdamW step's constants (src/optim/adamw.ts). */
/** gradScale: the gradient is first rounded to float(g · gradScale) (global-norm clipping; 1: none). */
typedef struct { double b1, b2, eps, decay, stepSize, bc2, gradScale; } toy_adamw_t;
void k_adamw(float *theta, const float *g, float *m, float *v, int64_t n, const toy_adamw_t *h);
double k_sum_squares(const float *x, int64_t n);
void k_scale(float *x, int64_t n, double s);
void k_accumulate(float *dst, const float *src, int64_t n);

// --- half floats ---
static inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else { // subnormal: normalize
      int e = -1;
      do { man <<= 1; e++; } while (!(man & 0x400));
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
  else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  union { uint32_t u; float f; } v = { bits };
  return v.f;
}
/** float → half, rounding to nearest even (as F16C and ggml do). */
static inline uint16_t f32_to_f16(float f) {
  union { float f; uint32_t u; } v = { f };
  const uint32_t sign = (v.u >> 16) & 0x8000, absu = v.u & 0x7fffffffu;
  if (absu >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0)); // inf / nan
  if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);                                      // overflow
  if (absu < 0x38800000u) {                                                                       // subnormal half
    union { uint32_t u; float f; } a = { absu };
    const float scaled = a.f * 16777216.0f; // 2^24: one half-subnormal unit becomes 1
    return (uint16_t)(sign | (uint32_t)nearbyintf(scaled));
  }
  uint32_t m = absu + 0xc8000fffu + ((absu >> 13) & 1); // rebias exponent, round to nearest even
  return (uint16_t)(sign | (m >> 13));
}
/** The float nearest to f that a half can hold. */
static inline float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }
static inline float bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v = { (uint32_t)h << 16 };
  return v.f;
}

#endif
