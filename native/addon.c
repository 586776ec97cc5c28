// Node-API surface of the cpu backend. Every kernel takes typed arrays and works on their memory
// directly (no copies); sizes are checked here so a wrong call throws instead of crashing.
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "toy.h"

int toy_has_avx2 = 0;
int toy_has_avx512 = 0;
int toy_has_vnni = 0;
int toy_stream_l1 = 0; // prefetch.h
int toy_stream_hw = 0; // prefetch.h
int toy_stream_all = 0; // prefetch.h
int toy_kv_l2 = 0;     // attention_impl.h
int toy_has_bf16 = 0;
void matmul_init(void);
static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER; // kernels share scratch memory
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define MAXARGS 20
#define FAIL(...) do { char m_[4400]; snprintf(m_, sizeof m_, __VA_ARGS__); napi_throw_error(env, "TOY_NATIVE", m_); return NULL; } while (0)
#define ARGS(n) \
  size_t argc = MAXARGS; napi_value argv[MAXARGS]; \
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < (n)) FAIL("expected %d arguments", (int)(n))

typedef struct { void *data; size_t len; napi_typedarray_type type; } arr_t;

static int get_arr(napi_env env, napi_value v, napi_typedarray_type want, arr_t *a, const char *name) {
  bool is;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) { char m[128]; snprintf(m, sizeof m, "%s: expected a typed array", name); napi_throw_type_error(env, NULL, m); return 0; }
  napi_value ab; size_t off;
  napi_get_typedarray_info(env, v, &a->type, &a->len, &a->data, &ab, &off);
  if ((int)want >= 0 && a->type != want) { char m[128]; snprintf(m, sizeof m, "%s: wrong typed array type", name); napi_throw_type_error(env, NULL, m); return 0; }
  if (a->len > 0 && !a->data) { char m[128]; snprintf(m, sizeof m, "%s: detached buffer", name); napi_throw_error(env, NULL, m); return 0; }
  return 1;
}
static int get_i64(napi_env env, napi_value v, int64_t *out, const char *name) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok || d != d || d < -9e15 || d > 9e15 || d != (double)(int64_t)d) {
    char m[128]; snprintf(m, sizeof m, "%s: expected an integer", name); napi_throw_type_error(env, NULL, m); return 0;
  }
  *out = (int64_t)d;
  return 1;
}
static int get_f32(napi_env env, napi_value v, float *out, const char *name) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok) { char m[128]; snprintf(m, sizeof m, "%s: expected a number", name); napi_throw_type_error(env, NULL, m); return 0; }
  *out = (float)d;
  return 1;
}
#define F32A(i, a) arr_t a; if (!get_arr(env, argv[i], napi_float32_array, &a, #a)) return NULL
#define I32A(i, a) arr_t a; if (!get_arr(env, argv[i], napi_int32_array, &a, #a)) return NULL
#define BYTES(i, a) arr_t a; if (!get_arr(env, argv[i], napi_uint8_array, &a, #a)) return NULL
#define INT(i, x) int64_t x; if (!get_i64(env, argv[i], &x, #x)) return NULL
#define FLT(i, x) float x; if (!get_f32(env, argv[i], &x, #x)) return NULL
#define NEED(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)
// pool_stats_call (pool.c) adds each kernel call's time to TOY_POOL_STATS's report.
#define LOCKED(stmt) do { pthread_mutex_lock(&call_mu); const long t_ = pool_stats_begin(); stmt; pool_stats_call(t_); pthread_mutex_unlock(&call_mu); } while (0)

// While a decode plan is recorded (plan.c, js_plan_begin), each kernel call below adds itself to it,
// and the typed arrays it was given (or arrays of them) go onto the plan's keep list, so that its
// memory lives as long as the plan. A call that cannot be replayed refuses the plan instead.
static _Thread_local napi_ref keep_ref;
static _Thread_local uint32_t keep_n;
static toy_plan_cmd_t *record(napi_env env, int op, size_t argc, const napi_value *argv) {
  if (!toy_recording) return NULL;
  toy_plan_cmd_t *c = plan_add(toy_recording, op);
  if (!c) return NULL;
  napi_value keep;
  napi_get_reference_value(env, keep_ref, &keep);
  for (size_t i = 0; i < argc; i++) {
    napi_valuetype t;
    if (napi_typeof(env, argv[i], &t) == napi_ok && t == napi_object) napi_set_element(env, keep, keep_n++, argv[i]);
  }
  return c;
}
#define RECORD(op, fill) do { toy_plan_cmd_t *c = record(env, op, argc, argv); if (c) { fill; } } while (0)
#define NOT_REPLAYABLE(why) do { if (toy_recording) plan_refuse(toy_recording, why); } while (0)

// matmul(x, wBytes, type, rows, cols, T, out), and matmulPacked with the same arguments on
// repack()'s layout of the weight.
static napi_value matmul_call(napi_env env, napi_callback_info info, const char *name, int packed) {
  ARGS(7);
  F32A(0, x); BYTES(1, w); INT(2, type); INT(3, rows); INT(4, cols); INT(5, T); F32A(6, out);
  const size_t rb = row_bytes((int)type, cols);
  NEED(rb, "%s: unsupported weight type %lld or cols %lld", name, (long long)type, (long long)cols);
  NEED(rows > 0 && T >= 0, "%s: bad shape", name);
  NEED(w.len >= rb * (size_t)rows, "%s: weight has %zu bytes, needs %zu", name, w.len, rb * (size_t)rows);
  NEED(x.len >= (size_t)(T * cols), "%s: x has %zu values, needs %lld", name, x.len, (long long)(T * cols));
  NEED(out.len >= (size_t)(T * rows), "%s: out has %zu values, needs %lld", name, out.len, (long long)(T * rows));
  const uint8_t *wp = w.data;
  const size_t wlen = rb * (size_t)rows;
  readahead_before(&wp, &wlen, 1);
  RECORD(OP_MATMUL, c->p[0] = x.data; c->p[1] = w.data; c->p[2] = out.data;
         c->i[0] = type; c->i[1] = rows; c->i[2] = cols; c->i[3] = T; c->i[4] = packed);
  LOCKED(k_matmul_packed(x.data, w.data, (int)type, rows, cols, T, out.data, packed));
  return NULL;
}
static napi_value js_matmul(napi_env env, napi_callback_info info) { return matmul_call(env, info, "matmul", 0); }
static napi_value js_matmul_packed(napi_env env, napi_callback_info info) { return matmul_call(env, info, "matmulPacked", 1); }

// matmulMulti(x, cols, T, weights[], desc, outs[]): desc holds [type, rows, packed] per weight.
// Every product as matmulPacked (or matmul, packed 0) gives it, in one pool job; returns false
// (nothing computed) when the weights' activations are quantized differently.
static napi_value js_matmul_multi(napi_env env, napi_callback_info info) {
  ARGS(6);
  F32A(0, x); INT(1, cols); INT(2, T); I32A(4, desc);
  bool isArr;
  uint32_t nw = 0, no = 0;
  NEED(napi_is_array(env, argv[3], &isArr) == napi_ok && isArr && napi_get_array_length(env, argv[3], &nw) == napi_ok &&
       napi_is_array(env, argv[5], &isArr) == napi_ok && isArr && napi_get_array_length(env, argv[5], &no) == napi_ok,
       "matmulMulti: weights and outs must be arrays");
  NEED(nw >= 1 && nw <= TOY_MM_MULTI_MAX && no == nw && desc.len >= 3 * (size_t)nw, "matmulMulti: expected 1..%d weights, as many outs and 3 desc values each", TOY_MM_MULTI_MAX);
  NEED(cols > 0 && T >= 0 && x.len >= (size_t)(T * cols), "matmulMulti: x has %zu values, needs %lld", x.len, (long long)(T * cols));
  toy_mm_weight_t ws[TOY_MM_MULTI_MAX];
  const int32_t *d = desc.data;
  for (uint32_t i = 0; i < nw; i++) {
    napi_value wv, ov;
    if (napi_get_element(env, argv[3], i, &wv) != napi_ok || napi_get_element(env, argv[5], i, &ov) != napi_ok) FAIL("matmulMulti: bad element %u", i);
    arr_t w, out;
    if (!get_arr(env, wv, napi_uint8_array, &w, "weights[i]") || !get_arr(env, ov, napi_float32_array, &out, "outs[i]")) return NULL;
    const int64_t type = d[3 * i], rows = d[3 * i + 1];
    const size_t rb = row_bytes((int)type, cols);
    NEED(rb, "matmulMulti: weight %u: unsupported type %lld or cols %lld", i, (long long)type, (long long)cols);
    NEED(rows > 0 && w.len >= rb * (size_t)rows, "matmulMulti: weight %u has %zu bytes, needs %zu", i, w.len, rb * (size_t)(rows > 0 ? rows : 0));
    NEED(out.len >= (size_t)(T * rows), "matmulMulti: out %u has %zu values, needs %lld", i, out.len, (long long)(T * rows));
    ws[i] = (toy_mm_weight_t){ w.data, (int)type, d[3 * i + 2] != 0, rows, out.data };
  }
  const uint8_t *wp[TOY_MM_MULTI_MAX];
  size_t wlen[TOY_MM_MULTI_MAX];
  for (uint32_t i = 0; i < nw; i++) { wp[i] = ws[i].w; wlen[i] = row_bytes(ws[i].type, cols) * (size_t)ws[i].rows; }
  readahead_before(wp, wlen, (int)nw);
  int done;
  LOCKED(done = k_matmul_multi(x.data, (int)nw, ws, cols, T));
  if (done) RECORD(OP_MULTI, c->p[0] = x.data; c->i[0] = cols; c->i[1] = T; c->i[2] = nw; memcpy(c->ws, ws, sizeof ws[0] * nw));
  napi_value r;
  napi_get_boolean(env, done != 0, &r);
  return r;
}

// The file mappings made by mapFile, so that repack knows which weights' pages it may drop.
#define MAX_MAPS 256
static struct { const uint8_t *p; size_t len; } maps[MAX_MAPS];
static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;

static void maps_add(const void *p, size_t len) {
  pthread_mutex_lock(&maps_mu);
  for (int i = 0; i < MAX_MAPS; i++) if (!maps[i].p) { maps[i].p = p; maps[i].len = len; break; }
  pthread_mutex_unlock(&maps_mu);
}
static void maps_remove(const void *p) {
  pthread_mutex_lock(&maps_mu);
  for (int i = 0; i < MAX_MAPS; i++) if (maps[i].p == p) maps[i].p = NULL;
  pthread_mutex_unlock(&maps_mu);
}

// repack(wBytes, type, rows, cols): the weight in the layout the widest kernels stream best (a new
// Uint8Array of the same size, for matmulPacked), or undefined when this CPU and type have none.
// When the bytes lie in a mapFile mapping, their pages are dropped from memory (MADV_DONTNEED) as
// the copy is made, a slice of rows at a time: the copy replaces them, and the peak holds one
// slice twice, not the whole weight (a 56 MB embedding table). A later read of the original bytes
// (say, getRows on a tied embedding) faults them in again from the file. toy never writes to
// weights.
static int mapped(const uint8_t *p, size_t len) {
  int found = 0;
  pthread_mutex_lock(&maps_mu);
  for (int i = 0; i < MAX_MAPS && !found; i++) found = maps[i].p && p >= maps[i].p && p + len <= maps[i].p + maps[i].len;
  pthread_mutex_unlock(&maps_mu);
  return found;
}

static void drop_pages(const uint8_t *p, size_t len) {
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + len) & ~(page - 1);
  if (b > a) {
    madvise((void *)a, b - a, MADV_DONTNEED);
    // A later read of these bytes (getRows on a tied embedding: a few scattered rows) faults in
    // only its own page, not the kernel's readahead window around it (~35 MB resident for 128
    // random token rows of SmolLM2's table otherwise).
    madvise((void *)a, b - a, MADV_RANDOM);
  }
}

// Repacked copies live in arenas of 2 MB-aligned memory marked MADV_HUGEPAGE (transparent huge
// pages in "madvise" mode, this host's setting): decode streams every weight once a token, and on
// 4 KB pages that is a TLB miss every 4 KB. One arena holds many weights, most of them smaller
// than a huge page; each copy is an external ArrayBuffer whose finalizer gives its bytes back (and
// tells readahead.c, which may read registered copies), and an arena is unmapped when the last of
// its copies is collected. Only touched pages are resident, so an arena's unused tail costs at
// most one huge page; arenas of 256 MB of address space leave fewer such tails than smaller ones.
#define HUGE_PAGE ((size_t)2 << 20)
#define ARENA_BYTES ((size_t)256 << 20)
typedef struct { uint8_t *base; size_t size, used; long live; } arena_t;
static arena_t *arena_now; // where the next copy goes (NULL: none yet, or it was unmapped)
static pthread_mutex_t arena_mu = PTHREAD_MUTEX_INITIALIZER;

static void arena_unmap(arena_t *a) { munmap(a->base, a->size); free(a); }

// A 2 MB-aligned anonymous mapping of `size` (a multiple of HUGE_PAGE) bytes marked
// MADV_HUGEPAGE, or NULL.
static uint8_t *map_huge(size_t size) {
  uint8_t *p = mmap(NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uint8_t *base = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
  if (base > p) munmap(p, (size_t)(base - p));
  if (base + size < p + size + HUGE_PAGE) munmap(base + size, (size_t)(p + size + HUGE_PAGE - (base + size)));
  madvise(base, size, MADV_HUGEPAGE); // a hint: without THP this is ordinary memory
  return base;
}

static arena_t *arena_new(size_t size) {
  arena_t *a = malloc(sizeof *a);
  if (!a) return NULL;
  uint8_t *base = map_huge(size);
  if (!base) { free(a); return NULL; }
  *a = (arena_t){ base, size, 0, 0 };
  return a;
}

// len bytes (64-byte aligned) from the current arena, or from a new one; *owner gets the arena.
static uint8_t *arena_take(size_t len, arena_t **owner) {
  pthread_mutex_lock(&arena_mu);
  uint8_t *p = NULL;
  if (len > ARENA_BYTES / 2) { // a large weight gets an arena of its own
    arena_t *a = arena_new((len + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    if (a) { a->used = len; a->live = 1; p = a->base; *owner = a; }
  } else {
    if (!arena_now || arena_now->used + len > arena_now->size) {
      if (arena_now && arena_now->live == 0) arena_unmap(arena_now);
      arena_now = arena_new(ARENA_BYTES);
    }
    if (arena_now) {
      p = arena_now->base + arena_now->used;
      arena_now->used = (arena_now->used + len + 63) & ~(size_t)63;
      arena_now->live++;
      *owner = arena_now;
    }
  }
  pthread_mutex_unlock(&arena_mu);
  return p;
}

static void arena_give(napi_env env, void *data, void *hint) {
  (void)env;
  arena_t *a = hint;
  readahead_unregister(data); // no worker reads the copy from now on (readahead.c)
  pthread_mutex_lock(&arena_mu);
  if (--a->live == 0) {
    if (a == arena_now) arena_now = NULL;
    arena_unmap(a);
  }
  pthread_mutex_unlock(&arena_mu);
}

// allocHugePages(bytes): `bytes` zeroed bytes of their own 2 MB-aligned mapping marked MADV_HUGEPAGE,
// as a Uint8Array (its finalizer unmaps it), or null where that cannot be had. For the KV cache:
// decode attention walks every cached row of every layer once a token, and on 4 KB pages that is
// a TLB miss every ~10 rows (SmolLM2's 384-byte F16 rows). AMD EPYC (Zen 4), SmolLM2 shapes, an
// F16 cache of 4096 positions read from memory, 1 thread: 182 against 224 µs a layer (in-process
// paired blocks, scripts/attention-cpu-time.mjs's setting; inside decode steps docs/internals.md).
// Pages are resident once written, 2 MB at a time: the caller sizes the buffer to what it will
// fill (src/blocks/kvCache.ts).
static void unmap_huge(napi_env env, void *data, void *hint) { (void)env; munmap(data, (size_t)hint); }
static napi_value js_alloc_huge_pages(napi_env env, napi_callback_info info) {
  ARGS(1);
  INT(0, len);
  NEED(len > 0, "allocHugePages: bad length %lld", (long long)len);
  napi_value res;
  napi_get_null(env, &res);
  const size_t size = ((size_t)len + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uint8_t *base = map_huge(size);
  if (!base) return res;
  napi_value ab;
  if (napi_create_external_arraybuffer(env, base, (size_t)len, unmap_huge, (void *)size, &ab) != napi_ok) { munmap(base, size); return res; }
  napi_create_typedarray(env, napi_uint8_array, (size_t)len, ab, 0, &res);
  return res;
}

/** Rows repacked between two page drops (a multiple of k_repack's row groups). */
#define REPACK_SLICE_ROWS 1024

static napi_value js_repack(napi_env env, napi_callback_info info) {
  ARGS(4);
  BYTES(0, w); INT(1, type); INT(2, rows); INT(3, cols);
  const size_t rb = row_bytes((int)type, cols);
  NEED(rb, "repack: unsupported weight type %lld or cols %lld", (long long)type, (long long)cols);
  NEED(rows > 0 && w.len >= rb * (size_t)rows, "repack: weight has %zu bytes, needs %zu", w.len, rb * (size_t)rows);
  const size_t len = rb * (size_t)rows;
  napi_value ab, arr, undef;
  napi_get_undefined(env, &undef);
  const int drop = mapped(w.data, len);
  // An F32 weight outside a file mapping may be a training parameter, which the optimizer updates
  // in place: a copy would go stale. A file's F32 weights are only read (training copies them).
  if (type == T_F32 && !drop) return undef;
  arena_t *owner = NULL;
  uint8_t *dst = arena_take(len, &owner);
  if (!dst) FAIL("repack: cannot allocate %zu bytes", len);
  // When the first slice finds no layout, ab is dropped unused: its finalizer gives the bytes back.
  if (napi_create_external_arraybuffer(env, dst, len, arena_give, owner, &ab) != napi_ok) {
    arena_give(env, dst, owner);
    owner = NULL;
    void *plain;
    if (napi_create_arraybuffer(env, len, &plain, &ab) != napi_ok) FAIL("repack: cannot allocate %zu bytes", len);
    dst = plain; // a runtime without external buffers: ordinary memory
  }
  // Slices start at multiples of the row groups; the last one takes the rest (k_repack copies a
  // tail of fewer rows than a group as it is, and refuses a weight of fewer rows than a group).
  for (int64_t r0 = 0; r0 < rows;) {
    const int64_t n = rows - r0 >= 2 * REPACK_SLICE_ROWS ? REPACK_SLICE_ROWS : rows - r0;
    int packed;
    LOCKED(packed = k_repack(w.data + (size_t)r0 * rb, (int)type, n, cols, dst + (size_t)r0 * rb));
    if (!packed) return undef; // the first slice: no layout for this CPU and type
    if (drop) drop_pages(w.data, (size_t)(r0 + n) * rb); // from the start: no page left at a slice edge
    r0 += n;
  }
  if (owner) readahead_register(dst, len); // an arena's copy: its release is heard (arena_give)
  napi_create_typedarray(env, napi_uint8_array, len, ab, 0, &arr);
  return arr;
}

// getRows(wBytes, type, rows, cols, ids, out[, packed]): packed 1 when wBytes is repack()'s copy.
static napi_value js_get_rows(napi_env env, napi_callback_info info) {
  ARGS(6);
  BYTES(0, w); INT(1, type); INT(2, rows); INT(3, cols); I32A(4, ids); F32A(5, out);
  int64_t packed = 0;
  if (argc > 6 && !get_i64(env, argv[6], &packed, "packed")) return NULL;
  const size_t rb = row_bytes((int)type, cols);
  NEED(rb, "getRows: unsupported weight type %lld or cols %lld", (long long)type, (long long)cols);
  NEED(w.len >= rb * (size_t)rows, "getRows: weight too small");
  NEED(out.len >= ids.len * (size_t)cols, "getRows: out too small");
  const int32_t *id = ids.data;
  for (size_t i = 0; i < ids.len; i++) NEED(id[i] >= 0 && id[i] < rows, "getRows: id %d out of range [0, %lld)", id[i], (long long)rows);
  RECORD(OP_GET_ROWS, c->p[0] = w.data; c->p[1] = ids.data; c->p[2] = out.data;
         c->i[0] = type; c->i[1] = rows; c->i[2] = cols; c->i[3] = (int64_t)ids.len; c->i[4] = packed != 0);
  LOCKED(k_get_rows(w.data, (int)type, rows, cols, ids.data, (int64_t)ids.len, out.data, packed != 0));
  return NULL;
}

// rmsNorm(x, weight, rows, n, eps, out)
static napi_value js_rms_norm(napi_env env, napi_callback_info info) {
  ARGS(6);
  F32A(0, x); F32A(1, w); INT(2, rows); INT(3, n); FLT(4, eps); F32A(5, out);
  NEED(rows >= 0 && n > 0 && x.len >= (size_t)(rows * n) && out.len >= (size_t)(rows * n) && w.len >= (size_t)n, "rmsNorm: bad sizes");
  RECORD(OP_RMS_NORM, c->p[0] = x.data; c->p[1] = w.data; c->p[2] = out.data; c->i[0] = rows; c->i[1] = n; c->f[0] = eps);
  LOCKED(k_rms_norm(x.data, w.data, rows, n, eps, out.data));
  return NULL;
}

// addRmsNorm(a, b, weight, rows, n, eps, sum, out): sum = a + b, then out = rmsNorm(sum), in one
// call (a block's residual add and the next sub-block's norm; the same bits as add then rmsNorm).
static napi_value js_add_rms_norm(napi_env env, napi_callback_info info) {
  ARGS(8);
  F32A(0, a); F32A(1, b); F32A(2, w); INT(3, rows); INT(4, n); FLT(5, eps); F32A(6, sum); F32A(7, out);
  NEED(rows >= 0 && n > 0 && w.len >= (size_t)n, "addRmsNorm: bad shape");
  const size_t len = (size_t)(rows * n);
  NEED(a.len >= len && b.len >= len && sum.len >= len && out.len >= len, "addRmsNorm: bad sizes");
  RECORD(OP_ADD_RMS_NORM, c->p[0] = a.data; c->p[1] = b.data; c->p[2] = w.data; c->p[3] = sum.data; c->p[4] = out.data;
         c->i[0] = rows; c->i[1] = n; c->f[0] = eps);
  LOCKED(k_add(a.data, b.data, sum.data, (int64_t)len); k_rms_norm(sum.data, w.data, rows, n, eps, out.data));
  return NULL;
}

// layerNorm(x, weight, bias|null, rows, n, eps, out)
static napi_value js_layer_norm(napi_env env, napi_callback_info info) {
  ARGS(7);
  F32A(0, x); F32A(1, w);
  napi_valuetype bt; napi_typeof(env, argv[2], &bt);
  arr_t b = { NULL, 0, 0 };
  if (bt != napi_null && bt != napi_undefined && !get_arr(env, argv[2], napi_float32_array, &b, "bias")) return NULL;
  INT(3, rows); INT(4, n); FLT(5, eps); F32A(6, out);
  NEED(rows >= 0 && n > 0 && x.len >= (size_t)(rows * n) && out.len >= (size_t)(rows * n) && w.len >= (size_t)n, "layerNorm: bad sizes");
  NEED(!b.data || b.len >= (size_t)n, "layerNorm: bias too small");
  RECORD(OP_LAYER_NORM, c->p[0] = x.data; c->p[1] = w.data; c->p[2] = b.data; c->p[3] = out.data; c->i[0] = rows; c->i[1] = n; c->f[0] = eps);
  LOCKED(k_layer_norm(x.data, w.data, b.data, rows, n, eps, out.data));
  return NULL;
}

// rope(x, T, nHeads, headDim, ropeDims, positions, invFreq, neox)
static napi_value js_rope(napi_env env, napi_callback_info info) {
  ARGS(8);
  F32A(0, x); INT(1, T); INT(2, nHeads); INT(3, headDim); INT(4, ropeDims); I32A(5, pos); F32A(6, invFreq); INT(7, neox);
  NEED(T >= 0 && nHeads > 0 && headDim > 0 && ropeDims >= 0 && ropeDims <= headDim && ropeDims % 2 == 0 && ropeDims <= 2048, "rope: bad shape");
  NEED(x.len >= (size_t)(T * nHeads * headDim) && pos.len >= (size_t)T && invFreq.len >= (size_t)(ropeDims / 2), "rope: bad sizes");
  RECORD(OP_ROPE, c->p[0] = x.data; c->p[1] = pos.data; c->p[2] = invFreq.data;
         c->i[0] = T; c->i[1] = nHeads; c->i[2] = headDim; c->i[3] = ropeDims; c->i[4] = neox);
  LOCKED(k_rope(x.data, T, nHeads, headDim, ropeDims, pos.data, invFreq.data, (int)neox));
  return NULL;
}

// ropePair(q, k, T, qHeads, kHeads, headDim, ropeDims, positions, invFreq, neox): rope(q, ...) then
// rope(k, ...) in one call (a decode step's attention rotates both at the same positions; one
// call less per layer, and k reuses the cos/sin table q's call made).
static napi_value js_rope_pair(napi_env env, napi_callback_info info) {
  ARGS(10);
  F32A(0, q); F32A(1, k); INT(2, T); INT(3, qHeads); INT(4, kHeads); INT(5, headDim); INT(6, ropeDims); I32A(7, pos); F32A(8, invFreq); INT(9, neox);
  NEED(T >= 0 && qHeads > 0 && kHeads > 0 && headDim > 0 && ropeDims >= 0 && ropeDims <= headDim && ropeDims % 2 == 0 && ropeDims <= 2048, "ropePair: bad shape");
  NEED(q.len >= (size_t)(T * qHeads * headDim) && k.len >= (size_t)(T * kHeads * headDim) && pos.len >= (size_t)T && invFreq.len >= (size_t)(ropeDims / 2),
       "ropePair: bad sizes");
  RECORD(OP_ROPE_PAIR, c->p[0] = q.data; c->p[1] = k.data; c->p[2] = pos.data; c->p[3] = invFreq.data;
         c->i[0] = T; c->i[1] = qHeads; c->i[2] = kHeads; c->i[3] = headDim; c->i[4] = ropeDims; c->i[5] = neox);
  LOCKED(k_rope(q.data, T, qHeads, headDim, ropeDims, pos.data, invFreq.data, (int)neox);
         k_rope(k.data, T, kHeads, headDim, ropeDims, pos.data, invFreq.data, (int)neox));
  return NULL;
}

// attention(q, kBytes, vBytes, kvType, T, pos0, nKeys, nHeads, nKVHeads, headDim, scale, softcap, window, causal, out)
// storeKV(x, kvType, dst, dstOffset)
static napi_value js_kv_store(napi_env env, napi_callback_info info) {
  ARGS(4);
  F32A(0, x); INT(1, type); BYTES(2, dst); INT(3, off);
  const size_t rb = kv_row_bytes((int)type, (int64_t)x.len);
  NEED(rb, "storeKV: type %lld cannot store %zu values", (long long)type, x.len);
  NEED(off >= 0 && (size_t)off + rb <= dst.len, "storeKV: %zu bytes do not fit at %lld in %zu", rb, (long long)off, dst.len);
  NOT_REPLAYABLE("storeKV (a plan binds keys and values stored together, storeKVPair)");
  LOCKED(k_kv_store(x.data, (int64_t)x.len, (int)type, (uint8_t *)dst.data + off));
  return NULL;
}

// storeKVPair(k, v, kvType, kDst, vDst, dstOffset): storeKV(k, kvType, kDst, dstOffset) and the
// same for v into vDst, in one call (a cache layer's keys and values at the same rows).
static napi_value js_kv_store_pair(napi_env env, napi_callback_info info) {
  ARGS(6);
  F32A(0, k); F32A(1, v); INT(2, type); BYTES(3, kDst); BYTES(4, vDst); INT(5, off);
  const size_t rb = kv_row_bytes((int)type, (int64_t)k.len);
  NEED(rb && v.len == k.len, "storeKVPair: type %lld cannot store %zu keys and %zu values", (long long)type, k.len, v.len);
  NEED(off >= 0 && (size_t)off + rb <= kDst.len && (size_t)off + rb <= vDst.len, "storeKVPair: %zu bytes do not fit at %lld in %zu / %zu", rb, (long long)off, kDst.len, vDst.len);
  RECORD(OP_KV_PAIR, c->p[0] = k.data; c->p[1] = v.data; c->p[2] = kDst.data; c->p[3] = vDst.data;
         c->i[0] = (int64_t)k.len; c->i[1] = off; c->i[2] = type; plan_bind_kv(toy_recording, c));
  LOCKED(k_kv_store(k.data, (int64_t)k.len, (int)type, (uint8_t *)kDst.data + off);
         k_kv_store(v.data, (int64_t)v.len, (int)type, (uint8_t *)vDst.data + off));
  return NULL;
}

// attentionBatch(q, kvType, segs, keys, values, nHeads, nKVHeads, headDim, scale, softcap, window, causal, out):
// segs an Int32Array of [start, T, pos0, nKeys] per sequence, keys / values arrays of that
// sequence's cache bytes (Uint8Array).
#define MAX_ATT_SEGS 4096
static napi_value js_attention_batch(napi_env env, napi_callback_info info) {
  ARGS(13);
  F32A(0, q); INT(1, type); I32A(2, segs); INT(5, nHeads); INT(6, nKV); INT(7, headDim);
  FLT(8, scale); FLT(9, softcap); INT(10, window); INT(11, causal); F32A(12, out);
  NEED(nHeads > 0 && nKV > 0 && nHeads % nKV == 0 && headDim > 0, "attentionBatch: bad shape");
  const size_t rb = kv_row_bytes((int)type, nKV * headDim);
  NEED(rb && kv_row_bytes((int)type, headDim), "attentionBatch: KV type %lld with head size %lld is not a KV-cache type (f32, f16, q8_0 with head size a multiple of 32)", (long long)type, (long long)headDim);
  NEED(segs.len % 4 == 0 && segs.len / 4 <= MAX_ATT_SEGS, "attentionBatch: segs must hold [start, T, pos0, nKeys] for at most %d sequences", MAX_ATT_SEGS);
  const int64_t nSeg = (int64_t)segs.len / 4, width = nHeads * headDim;
  uint32_t nk = 0, nv = 0;
  bool isArr;
  NEED(napi_is_array(env, argv[3], &isArr) == napi_ok && isArr && napi_get_array_length(env, argv[3], &nk) == napi_ok &&
       napi_is_array(env, argv[4], &isArr) == napi_ok && isArr && napi_get_array_length(env, argv[4], &nv) == napi_ok &&
       nk == (uint32_t)nSeg && nv == (uint32_t)nSeg, "attentionBatch: keys and values must be arrays of %lld caches", (long long)nSeg);
  static toy_att_seg_t sg[MAX_ATT_SEGS];
  const int32_t *d = segs.data;
  pthread_mutex_lock(&call_mu); // sg is shared
  for (int64_t s = 0; s < nSeg; s++) {
    napi_value kv, vv;
    arr_t k, v;
    if (napi_get_element(env, argv[3], (uint32_t)s, &kv) != napi_ok || napi_get_element(env, argv[4], (uint32_t)s, &vv) != napi_ok ||
        !get_arr(env, kv, napi_uint8_array, &k, "attentionBatch keys") || !get_arr(env, vv, napi_uint8_array, &v, "attentionBatch values")) {
      pthread_mutex_unlock(&call_mu);
      return NULL;
    }
    const int64_t start = d[4 * s], T = d[4 * s + 1], pos0 = d[4 * s + 2], nKeys = d[4 * s + 3];
    if (!(start >= 0 && T >= 0 && pos0 >= 0 && nKeys >= 0 && (size_t)((start + T) * width) <= q.len && (size_t)((start + T) * width) <= out.len &&
          k.len >= (size_t)nKeys * rb && v.len >= (size_t)nKeys * rb)) {
      pthread_mutex_unlock(&call_mu);
      FAIL("attentionBatch: sequence %lld (start %lld, T %lld, pos0 %lld, nKeys %lld) does not fit q/out (%zu values) or its cache (%zu bytes)",
           (long long)s, (long long)start, (long long)T, (long long)pos0, (long long)nKeys, q.len, k.len);
    }
    const toy_att_seg_t one = { k.data, v.data, start, T, pos0, nKeys };
    sg[s] = one;
  }
  const int ok = k_attention_batch(q.data, (int)type, nSeg, sg, nHeads, nKV, headDim, scale, softcap, window, (int)causal, out.data);
  if (ok) RECORD(OP_ATTENTION_BATCH, c->p[0] = q.data; c->p[1] = out.data; c->i[0] = nSeg; c->i[1] = type; c->i[2] = nHeads; c->i[3] = nKV;
                 c->i[4] = headDim; c->i[5] = window; c->i[6] = causal; c->f[0] = scale; c->f[1] = softcap; plan_bind_segs(toy_recording, c, sg));
  pthread_mutex_unlock(&call_mu);
  NEED(ok, "attentionBatch: out of memory");
  return NULL;
}

static napi_value js_attention(napi_env env, napi_callback_info info) {
  ARGS(15);
  F32A(0, q); BYTES(1, k); BYTES(2, v); INT(3, type); INT(4, T); INT(5, pos0); INT(6, nKeys); INT(7, nHeads); INT(8, nKV); INT(9, headDim);
  FLT(10, scale); FLT(11, softcap); INT(12, window); INT(13, causal); F32A(14, out);
  NEED(T >= 0 && nKeys >= 0 && nHeads > 0 && nKV > 0 && nHeads % nKV == 0 && headDim > 0 && pos0 >= 0, "attention: bad shape");
  const size_t rb = kv_row_bytes((int)type, nKV * headDim);
  NEED(rb && kv_row_bytes((int)type, headDim), "attention: KV type %lld with head size %lld is not a KV-cache type (f32, f16, q8_0 with head size a multiple of 32)", (long long)type, (long long)headDim);
  NEED(q.len >= (size_t)(T * nHeads * headDim) && out.len >= (size_t)(T * nHeads * headDim), "attention: q/out too small");
  NEED(k.len >= (size_t)nKeys * rb && v.len >= (size_t)nKeys * rb, "attention: k/v too small");
  RECORD(OP_ATTENTION, c->p[0] = q.data; c->p[1] = out.data; c->p[2] = k.data; c->p[3] = v.data;
         c->i[0] = T; c->i[1] = pos0; c->i[2] = nKeys; c->i[3] = type; c->i[4] = nHeads; c->i[5] = nKV; c->i[6] = headDim;
         c->i[7] = window; c->i[8] = causal; c->f[0] = scale; c->f[1] = softcap; plan_bind_kv(toy_recording, c));
  LOCKED(k_attention(q.data, k.data, v.data, (int)type, T, pos0, nKeys, nHeads, nKV, headDim, scale, softcap, window, (int)causal, out.data));
  return NULL;
}

static napi_value binary(napi_env env, napi_callback_info info, int op) {
  ARGS(3);
  F32A(0, a); F32A(1, b); F32A(2, out);
  NEED(a.len >= out.len && b.len >= out.len, "elementwise: inputs shorter than out");
  RECORD(op == 0 ? OP_SWIGLU : op == 1 ? OP_GEGLU : OP_ADD, c->p[0] = a.data; c->p[1] = b.data; c->p[2] = out.data; c->i[0] = (int64_t)out.len);
  LOCKED(if (op == 0) k_swiglu(a.data, b.data, out.data, out.len);
         else if (op == 1) k_geglu(a.data, b.data, out.data, out.len);
         else k_add(a.data, b.data, out.data, out.len));
  return NULL;
}
static napi_value js_swiglu(napi_env env, napi_callback_info info) { return binary(env, info, 0); }
static napi_value js_geglu(napi_env env, napi_callback_info info) { return binary(env, info, 1); }
static napi_value js_add(napi_env env, napi_callback_info info) { return binary(env, info, 2); }

static napi_value js_gelu(napi_env env, napi_callback_info info) {
  ARGS(2);
  F32A(0, x); F32A(1, out);
  NEED(x.len >= out.len, "gelu: x shorter than out");
  RECORD(OP_GELU, c->p[0] = x.data; c->p[1] = out.data; c->i[0] = (int64_t)out.len);
  LOCKED(k_gelu(x.data, out.data, out.len));
  return NULL;
}

static napi_value js_softmax(napi_env env, napi_callback_info info) {
  ARGS(3);
  F32A(0, x); INT(1, rows); INT(2, n);
  NEED(rows >= 0 && n > 0 && x.len >= (size_t)(rows * n), "softmax: bad sizes");
  RECORD(OP_SOFTMAX, c->p[0] = x.data; c->i[0] = rows; c->i[1] = n);
  LOCKED(k_softmax(x.data, rows, n));
  return NULL;
}

// argmax(x): the index of x's first largest entry (engines/sampling.ts argmax, natively).
static napi_value js_argmax(napi_env env, napi_callback_info info) {
  ARGS(1);
  F32A(0, x);
  NEED(x.len > 0, "argmax: empty array");
  napi_value r;
  napi_create_int64(env, k_argmax(x.data, (int64_t)x.len), &r);
  return r;
}

// topKHeap(x, k, heap): topIds' heap of the k best entries of x (0 < k ≤ x's length, heap an Int32Array of k).
static napi_value js_topk_heap(napi_env env, napi_callback_info info) {
  ARGS(3);
  F32A(0, x); INT(1, k); I32A(2, heap);
  NEED(k > 0 && (size_t)k <= x.len && heap.len >= (size_t)k, "topKHeap: k is %lld for %zu entries and a heap of %zu", (long long)k, x.len, heap.len);
  k_topk_heap(x.data, (int64_t)x.len, k, heap.data);
  return NULL;
}

/** Values a row-major view of `rows` × `cols` with row stride ld reaches (0 when empty). */
static int extent_ok(size_t len, int64_t rows, int64_t cols, int64_t ld) {
  if (rows == 0 || cols == 0) return 1;
  return ld >= cols && (size_t)((rows - 1) * ld + cols) <= len;
}

// gemm(a, lda, transA, b, ldb, transB, c, ldc, M, N, K, accumulate): C (+)= op(A) op(B)
static napi_value js_gemm(napi_env env, napi_callback_info info) {
  ARGS(12);
  F32A(0, a); INT(1, lda); INT(2, transA); F32A(3, b); INT(4, ldb); INT(5, transB); F32A(6, c); INT(7, ldc);
  INT(8, M); INT(9, N); INT(10, K); INT(11, accumulate);
  NEED(M >= 0 && N >= 0 && K >= 0, "gemm: negative size");
  NEED(transA ? extent_ok(a.len, K, M, lda) : extent_ok(a.len, M, K, lda), "gemm: A (%zu values, lda %lld) is too small for %s%lld x %lld", a.len, (long long)lda, transA ? "transposed " : "", (long long)M, (long long)K);
  NEED(transB ? extent_ok(b.len, N, K, ldb) : extent_ok(b.len, K, N, ldb), "gemm: B (%zu values, ldb %lld) is too small for %s%lld x %lld", b.len, (long long)ldb, transB ? "transposed " : "", (long long)K, (long long)N);
  NEED(extent_ok(c.len, M, N, ldc), "gemm: C (%zu values, ldc %lld) is too small for %lld x %lld", c.len, (long long)ldc, (long long)M, (long long)N);
  const toy_gemm_t g = { M, N, K, a.data, lda, (int)transA, b.data, ldb, (int)transB, c.data, ldc, (int)accumulate };
  LOCKED(k_gemm(&g));
  return NULL;
}

static int attn_shape(napi_env env, napi_value *argv, toy_attn_shape_t *s) {
  int64_t v[5];
  static const char *names[5] = { "batch", "seq", "heads", "kvHeads", "headDim" };
  for (int i = 0; i < 5; i++) if (!get_i64(env, argv[i], &v[i], names[i])) return 0;
  float scale, softcap; int64_t window, causal;
  if (!get_f32(env, argv[5], &scale, "scale") || !get_f32(env, argv[6], &softcap, "softcap") ||
      !get_i64(env, argv[7], &window, "window") || !get_i64(env, argv[8], &causal, "causal")) return 0;
  if (v[0] < 0 || v[1] < 0 || v[2] <= 0 || v[3] <= 0 || v[2] % v[3] != 0 || v[4] <= 0 || window < 0 || v[1] > 65536) {
    napi_throw_range_error(env, NULL, "attentionTrain: bad shape");
    return 0;
  }
  *s = (toy_attn_shape_t){ v[0], v[1], v[2], v[3], v[4], scale, softcap, window, (int)causal };
  return 1;
}

// attentionTrain(B, T, H, KV, D, scale, softcap, window, causal, q, k, v, out, probs)
static napi_value js_attention_train(napi_env env, napi_callback_info info) {
  ARGS(14);
  toy_attn_shape_t s;
  if (!attn_shape(env, argv, &s)) return NULL;
  F32A(9, q); F32A(10, k); F32A(11, v); F32A(12, out); F32A(13, probs);
  const size_t nq = (size_t)(s.B * s.T * s.H * s.D), nk = (size_t)(s.B * s.T * s.KV * s.D), np = (size_t)(s.B * s.H * s.T * s.T);
  NEED(q.len >= nq && out.len >= nq && k.len >= nk && v.len >= nk && probs.len >= np, "attentionTrain: arrays too small");
  LOCKED(k_attention_train(&s, q.data, k.data, v.data, out.data, probs.data));
  return NULL;
}

// attentionTrainBackward(B, T, H, KV, D, scale, softcap, window, causal, q, k, v, probs, dout, dq, dk, dv)
static napi_value js_attention_train_backward(napi_env env, napi_callback_info info) {
  ARGS(17);
  toy_attn_shape_t s;
  if (!attn_shape(env, argv, &s)) return NULL;
  F32A(9, q); F32A(10, k); F32A(11, v); F32A(12, probs); F32A(13, dout); F32A(14, dq); F32A(15, dk); F32A(16, dv);
  const size_t nq = (size_t)(s.B * s.T * s.H * s.D), nk = (size_t)(s.B * s.T * s.KV * s.D), np = (size_t)(s.B * s.H * s.T * s.T);
  NEED(q.len >= nq && dout.len >= nq && dq.len >= nq && k.len >= nk && v.len >= nk && dk.len >= nk && dv.len >= nk && probs.len >= np,
       "attentionTrainBackward: arrays too small");
  LOCKED(k_attention_train_backward(&s, q.data, k.data, v.data, probs.data, dout.data, dq.data, dk.data, dv.data));
  return NULL;
}

// --- training ops (train_ops.c): gradients are added into the given arrays; null: not wanted ---

static int get_opt_f32(napi_env env, napi_value v, arr_t *a, const char *name) {
  napi_valuetype t;
  napi_typeof(env, v, &t);
  if (t == napi_null || t == napi_undefined) { *a = (arr_t){ NULL, 0, 0 }; return 1; }
  return get_arr(env, v, napi_float32_array, a, name);
}
static int get_f64(napi_env env, napi_value v, double *out, const char *name) {
  if (napi_get_value_double(env, v, out) != napi_ok) { char m[128]; snprintf(m, sizeof m, "%s: expected a number", name); napi_throw_type_error(env, NULL, m); return 0; }
  return 1;
}
#define OPT_F32A(i, a) arr_t a; if (!get_opt_f32(env, argv[i], &a, #a)) return NULL
#define F64A(i, a) arr_t a; if (!get_arr(env, argv[i], napi_float64_array, &a, #a)) return NULL
#define DBL(i, x) double x; if (!get_f64(env, argv[i], &x, #x)) return NULL
static napi_value number(napi_env env, double d) { napi_value r; napi_create_double(env, d, &r); return r; }

// gatedBackward(act, gate, up, dy, dgate|null, dup|null): act 0 SiLU, 1 GELU
static napi_value js_gated_backward(napi_env env, napi_callback_info info) {
  ARGS(6);
  INT(0, act); F32A(1, gate); F32A(2, up); F32A(3, dy); OPT_F32A(4, dgate); OPT_F32A(5, dup);
  const size_t n = gate.len;
  NEED(act == 0 || act == 1, "gatedBackward: act must be 0 (silu) or 1 (gelu)");
  NEED(up.len == n && dy.len == n && (!dgate.data || dgate.len == n) && (!dup.data || dup.len == n), "gatedBackward: arrays differ in length");
  LOCKED(k_gated_backward((int)act, gate.data, up.data, dy.data, dgate.data, dup.data, (int64_t)n));
  return NULL;
}

// rmsNormBackward(dy, x, g, rows, n, eps, dx|null, dg|null)
static napi_value js_rms_norm_backward(napi_env env, napi_callback_info info) {
  ARGS(8);
  F32A(0, dy); F32A(1, x); F32A(2, g); INT(3, rows); INT(4, n); FLT(5, eps); OPT_F32A(6, dx); OPT_F32A(7, dg);
  const size_t sz = (size_t)(rows * n);
  NEED(rows >= 0 && n > 0 && x.len >= sz && dy.len >= sz && g.len >= (size_t)n && (!dx.data || dx.len >= sz) && (!dg.data || dg.len >= (size_t)n),
       "rmsNormBackward: bad sizes");
  int ok;
  LOCKED(ok = k_rms_norm_backward(dy.data, x.data, g.data, rows, n, eps, dx.data, dg.data));
  NEED(ok, "rmsNormBackward: out of memory");
  return NULL;
}

// ropeBackward(dy, y, N, heads, headDim, dims, positions, invFreq, neox, dx|null, dinv|null)
static napi_value js_rope_backward(napi_env env, napi_callback_info info) {
  ARGS(11);
  F32A(0, dy); F32A(1, y); INT(2, N); INT(3, heads); INT(4, headDim); INT(5, dims); I32A(6, pos); F32A(7, invFreq); INT(8, neox);
  OPT_F32A(9, dx); OPT_F32A(10, dinv);
  const size_t sz = (size_t)(N * heads * headDim);
  NEED(N >= 0 && heads > 0 && headDim > 0 && dims >= 0 && dims <= headDim && dims % 2 == 0 && dims <= 2048, "ropeBackward: bad shape");
  NEED(dy.len >= sz && y.len >= sz && pos.len >= (size_t)N && invFreq.len >= (size_t)(dims / 2) && (!dx.data || dx.len >= sz) &&
       (!dinv.data || dinv.len >= (size_t)(dims / 2)), "ropeBackward: bad sizes");
  int ok;
  LOCKED(ok = k_rope_backward(dy.data, y.data, N, heads, headDim, dims, pos.data, invFreq.data, (int)neox, dx.data, dinv.data));
  NEED(ok, "ropeBackward: out of memory");
  return NULL;
}

// crossEntropy(z, targets, N, V, ignore, lse: Float64Array) → Σ (lse − z[target]) over scored rows
static napi_value js_cross_entropy(napi_env env, napi_callback_info info) {
  ARGS(6);
  F32A(0, z); I32A(1, targets); INT(2, N); INT(3, V); INT(4, ignore); F64A(5, lse);
  NEED(N >= 0 && V > 0 && z.len >= (size_t)(N * V) && targets.len >= (size_t)N && lse.len >= (size_t)N, "crossEntropy: bad sizes");
  const int32_t *t = targets.data;
  for (int64_t i = 0; i < N; i++) NEED(t[i] == ignore || (t[i] >= 0 && t[i] < V), "crossEntropy: target %d is outside 0..%lld", t[i], (long long)(V - 1));
  double total;
  LOCKED(total = k_cross_entropy(z.data, targets.data, N, V, (int32_t)ignore, lse.data));
  return number(env, total);
}

// crossEntropyBackward(z, targets, lse, N, V, ignore, g, dz)
static napi_value js_cross_entropy_backward(napi_env env, napi_callback_info info) {
  ARGS(8);
  F32A(0, z); I32A(1, targets); F64A(2, lse); INT(3, N); INT(4, V); INT(5, ignore); FLT(6, g); F32A(7, dz);
  NEED(N >= 0 && V > 0 && z.len >= (size_t)(N * V) && dz.len >= (size_t)(N * V) && targets.len >= (size_t)N && lse.len >= (size_t)N,
       "crossEntropyBackward: bad sizes");
  const int32_t *t = targets.data;
  for (int64_t i = 0; i < N; i++) NEED(t[i] == ignore || (t[i] >= 0 && t[i] < V), "crossEntropyBackward: target %d is outside 0..%lld", t[i], (long long)(V - 1));
  LOCKED(k_cross_entropy_backward(z.data, targets.data, lse.data, N, V, (int32_t)ignore, g, dz.data));
  return NULL;
}

// adamw(theta, g, m, v, b1, b2, eps, decay, stepSize, bc2, gradScale)
static napi_value js_adamw(napi_env env, napi_callback_info info) {
  ARGS(11);
  F32A(0, theta); F32A(1, g); F32A(2, m); F32A(3, v);
  DBL(4, b1); DBL(5, b2); DBL(6, eps); DBL(7, decay); DBL(8, stepSize); DBL(9, bc2); DBL(10, gradScale);
  NEED(g.len == theta.len && m.len == theta.len && v.len == theta.len, "adamw: arrays differ in length");
  const toy_adamw_t h = { b1, b2, eps, decay, stepSize, bc2, gradScale };
  LOCKED(k_adamw(theta.data, g.data, m.data, v.data, (int64_t)theta.len, &h));
  return NULL;
}

// sumSquares(x) → Σ x², in double
static napi_value js_sum_squares(napi_env env, napi_callback_info info) {
  ARGS(1);
  F32A(0, x);
  double s;
  LOCKED(s = k_sum_squares(x.data, (int64_t)x.len));
  return number(env, s);
}

// scale(x, s[, out]): x ← x · s, or out = x · s (each product rounded from double, as JavaScript's).
static napi_value js_scale(napi_env env, napi_callback_info info) {
  ARGS(2);
  F32A(0, x); DBL(1, s);
  if (argc < 3) {
    NOT_REPLAYABLE("scale in place");
    LOCKED(k_scale(x.data, (int64_t)x.len, s));
    return NULL;
  }
  F32A(2, out);
  NEED(out.len == x.len, "scale: out has %zu values, x %zu", out.len, x.len);
  RECORD(OP_SCALE, c->p[0] = x.data; c->p[1] = out.data; c->i[0] = (int64_t)x.len; c->d = s);
  LOCKED(memmove(out.data, x.data, x.len * sizeof(float)); k_scale(out.data, (int64_t)x.len, s));
  return NULL;
}

// accumulate(dst, src): dst += src
static napi_value js_accumulate(napi_env env, napi_callback_info info) {
  ARGS(2);
  F32A(0, dst); F32A(1, src);
  NEED(dst.len == src.len, "accumulate: %zu vs %zu values", dst.len, src.len);
  LOCKED(k_accumulate(dst.data, src.data, (int64_t)dst.len));
  return NULL;
}

// dequantizeRows(wBytes, type, rows, cols, out): every row (for tests and conversions).
static napi_value js_dequantize(napi_env env, napi_callback_info info) {
  ARGS(5);
  BYTES(0, w); INT(1, type); INT(2, rows); INT(3, cols); F32A(4, out);
  const size_t rb = row_bytes((int)type, cols);
  NEED(rb && w.len >= rb * (size_t)rows && out.len >= (size_t)(rows * cols), "dequantize: bad sizes or type");
  for (int64_t r = 0; r < rows; r++) dequantize_row((int)type, (const uint8_t *)w.data + r * rb, (float *)out.data + r * cols, cols);
  return NULL;
}

// planBegin(keep, keys[], values[], rowBytes, rows): record the kernel calls from now until
// planEnd (plan.c). keys[l] / values[l]: the KV cache's memory of layer l; rowBytes (Float64Array)
// and rows (Int32Array, the step's row of each layer) are read again by every replay, so the
// caller keeps them (and `keep`, where the recorded calls' arrays go) as long as the plan.
static napi_value js_plan_begin(napi_env env, napi_callback_info info) {
  ARGS(5);
  NEED(!toy_recording, "planBegin: a plan is already being recorded");
  bool isArr;
  uint32_t nk = 0, nv = 0;
  NEED(napi_is_array(env, argv[0], &isArr) == napi_ok && isArr, "planBegin: keep must be an array");
  NEED(napi_is_array(env, argv[1], &isArr) == napi_ok && isArr && napi_get_array_length(env, argv[1], &nk) == napi_ok &&
       napi_is_array(env, argv[2], &isArr) == napi_ok && isArr && napi_get_array_length(env, argv[2], &nv) == napi_ok && nk == nv && nk <= 4096,
       "planBegin: keys and values must be arrays of as many layers (at most 4096)");
  arr_t rowBytes, rows;
  if (!get_arr(env, argv[3], napi_float64_array, &rowBytes, "rowBytes") || !get_arr(env, argv[4], napi_int32_array, &rows, "rows")) return NULL;
  NEED(rowBytes.len >= nk && rows.len >= nk, "planBegin: rowBytes and rows need %u values", nk);
  static const uint8_t *keys[4096], *values[4096];
  for (uint32_t l = 0; l < nk; l++) {
    napi_value kv, vv;
    arr_t k, v;
    if (napi_get_element(env, argv[1], l, &kv) != napi_ok || napi_get_element(env, argv[2], l, &vv) != napi_ok ||
        !get_arr(env, kv, napi_uint8_array, &k, "keys[l]") || !get_arr(env, vv, napi_uint8_array, &v, "values[l]")) return NULL;
    keys[l] = k.data; values[l] = v.data;
  }
  toy_plan_t *p = plan_begin((int)nk, keys, values, rowBytes.data, rows.data);
  NEED(p, "planBegin: out of memory");
  napi_create_reference(env, argv[0], 1, &keep_ref);
  keep_n = 0;
  toy_recording = p;
  return NULL;
}

static void plan_finalize(napi_env env, void *data, void *hint) { (void)env; (void)hint; plan_free(data); }

// planEnd(result, logits): stop recording. result: the forward's output, which the caller keeps
// (the plan writes logits, of the same length, instead); null: the forward failed. Returns the
// plan, or why it cannot be replayed (a string).
static napi_value js_plan_end(napi_env env, napi_callback_info info) {
  ARGS(2);
  toy_plan_t *p = toy_recording;
  NEED(p, "planEnd: no plan is being recorded");
  toy_recording = NULL;
  napi_delete_reference(env, keep_ref);
  keep_ref = NULL;
  napi_valuetype t;
  napi_typeof(env, argv[0], &t);
  napi_value r;
  if (t == napi_null || t == napi_undefined) plan_refuse(p, "the forward failed");
  else {
    arr_t result, logits;
    if (!get_arr(env, argv[0], napi_float32_array, &result, "result") || !get_arr(env, argv[1], napi_float32_array, &logits, "logits")) { plan_free(p); return NULL; }
    if (logits.len != result.len) plan_refuse(p, "logits of another length than the result");
    else { plan_output(p, result.data, result.len); plan_output(p, logits.data, logits.len); }
  }
  const char *why = plan_invalid(p);
  if (why) {
    napi_create_string_utf8(env, why, NAPI_AUTO_LENGTH, &r);
    plan_free(p);
    return r;
  }
  napi_create_external(env, p, plan_finalize, NULL, &r);
  return r;
}

// planRun(plan, logits): the recorded calls again (one call per decode step), the step's logits
// into `logits` (the recording's own array or any other of its length).
static napi_value js_plan_run(napi_env env, napi_callback_info info) {
  ARGS(2);
  void *p = NULL;
  NEED(napi_get_value_external(env, argv[0], &p) == napi_ok && p, "planRun: expected a plan from planEnd");
  F32A(1, logits);
  NEED(!toy_recording, "planRun: a plan is being recorded");
  NEED(plan_output(p, logits.data, logits.len), "planRun: logits of %zu values, not the step's", logits.len);
  LOCKED(plan_run(p));
  return NULL;
}

// mapFile(path): the file's bytes, memory-mapped (private copy-on-write, so a stray write never
// reaches the file); unmapped when the ArrayBuffer is collected.
static void maps_remove(const void *p);
static void unmap(napi_env env, void *data, void *hint) { (void)env; maps_remove(data); readahead_unregister(data); munmap(data, (size_t)hint); }

static napi_value js_map_file(napi_env env, napi_callback_info info) {
  ARGS(1);
  char path[4096]; size_t plen;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &plen) != napi_ok) FAIL("mapFile: expected a path string");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) FAIL("mapFile: cannot open %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) { int e = errno; close(fd); FAIL("mapFile: cannot stat %s: %s", path, strerror(e)); }
  size_t len = (size_t)st.st_size;
  napi_value ab, arr;
  if (len == 0) {
    close(fd);
    void *d;
    napi_create_arraybuffer(env, 0, &d, &ab);
  } else {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) FAIL("mapFile: cannot map %s: %s", path, strerror(e));
    if (napi_create_external_arraybuffer(env, p, len, unmap, (void *)len, &ab) != napi_ok) {
      munmap(p, len);
      FAIL("mapFile: external array buffers are not allowed in this runtime");
    }
    maps_add(p, len);
    readahead_register(p, len);
  }
  napi_create_typedarray(env, napi_uint8_array, len, ab, 0, &arr);
  return arr;
}

static napi_value js_set_threads(napi_env env, napi_callback_info info) {
  ARGS(1);
  INT(0, n);
  NEED(n >= 1 && n <= 256, "setThreads: n must be in [1, 256]");
  LOCKED(pool_set_threads((int)n));
  return NULL;
}

static napi_value js_info(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value o, s, t;
  napi_create_object(env, &o);
  napi_value gemm;
  napi_create_string_utf8(env, toy_has_vnni ? "avx512vnni" : toy_has_avx2 ? "avx2" : "scalar", NAPI_AUTO_LENGTH, &s);
  napi_create_string_utf8(env, toy_has_avx512 ? "avx512" : toy_has_avx2 ? "avx2" : "scalar", NAPI_AUTO_LENGTH, &gemm);
  napi_set_named_property(env, o, "gemm", gemm);
  napi_create_int32(env, pool_threads(), &t);
  napi_set_named_property(env, o, "simd", s);
  napi_set_named_property(env, o, "threads", t);
  napi_value bf16;
  napi_get_boolean(env, toy_has_bf16, &bf16);
  napi_set_named_property(env, o, "bf16", bf16);
  return o;
}

static napi_value js_row_bytes(napi_env env, napi_callback_info info) {
  ARGS(2);
  INT(0, type); INT(1, cols);
  napi_value r;
  napi_create_double(env, (double)row_bytes((int)type, cols), &r);
  return r;
}

double toy_read_bandwidth(int threads);

static napi_value js_read_bandwidth(napi_env env, napi_callback_info info) {
  ARGS(1);
  INT(0, threads);
  napi_value r;
  napi_create_double(env, toy_read_bandwidth((int)threads), &r);
  return r;
}

static int default_threads(void) {
  const char *s = getenv("TOY_THREADS");
  if (s && atoi(s) > 0) return atoi(s);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

#if defined(__x86_64__) || defined(__i386__)
/** Whether the environment variable env names `yes` rather than `no`: unset or empty, the
 *  default; any other value, a warning and the default. */
static int env_choice(const char *env, const char *yes, const char *no, int yes_by_default) {
  const char *v = getenv(env);
  if (!v || !*v) return yes_by_default;
  if (!strcmp(v, yes)) return 1;
  if (!strcmp(v, no)) return 0;
  fprintf(stderr, "toy: %s=%s: expected %s or %s; using the default (%s)\n", env, v, yes, no, yes_by_default ? yes : no);
  return yes_by_default;
}
#endif

static void init_once(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  toy_has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const char *f = getenv("TOY_SIMD");
  toy_has_avx512 = toy_has_avx2 && __builtin_cpu_supports("avx512f");
  toy_has_vnni = toy_has_avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  toy_has_bf16 = toy_has_vnni && __builtin_cpu_supports("avx512bf16");
  // TOY_SIMD=scalar|avx2 caps the instruction set (tests compare the paths' bits; old CPUs' code).
  if (f && !strcmp(f, "scalar")) toy_has_avx2 = toy_has_avx512 = toy_has_vnni = toy_has_bf16 = 0;
  if (f && !strcmp(f, "avx2")) toy_has_avx512 = toy_has_vnni = toy_has_bf16 = 0;
  if (f && !strcmp(f, "avx512vnni")) toy_has_bf16 = 0;
  // Where decode's software prefetches put their lines, per CPU: the weights into L1 on AMD and
  // on Ice Lake servers, into L2 on the other Intel CPUs (prefetch.h); the KV cache into L2 on AMD
  // and into L1 elsewhere (attention_impl.h).
  const int amd = __builtin_cpu_is("amd"), icelake_server = __builtin_cpu_is("icelake-server");
  toy_stream_l1 = env_choice("TOY_STREAM_PREFETCH", "l1", "l2", amd || icelake_server);
  toy_stream_all = icelake_server; // the split Q6_K and F32 streams take that hint too there
  toy_kv_l2 = env_choice("TOY_KV_PREFETCH", "l2", "l1", amd);
  // F16 and Q8_0 decode streams: left to the hardware prefetcher on AMD (prefetch.h).
  toy_stream_hw = env_choice("TOY_WIDE_PREFETCH", "hw", "sw", amd);
#endif
  matmul_init();
  readahead_init();
  pool_init(default_threads());
}

NAPI_MODULE_INIT() {
  pthread_once(&once, init_once);
  napi_property_descriptor props[] = {
#define FN(name, f) { name, NULL, f, NULL, NULL, NULL, napi_default, NULL }
    FN("matmul", js_matmul), FN("matmulPacked", js_matmul_packed), FN("matmulMulti", js_matmul_multi), FN("repack", js_repack), FN("allocHugePages", js_alloc_huge_pages), FN("getRows", js_get_rows), FN("rmsNorm", js_rms_norm), FN("addRmsNorm", js_add_rms_norm), FN("layerNorm", js_layer_norm),
    FN("rope", js_rope), FN("ropePair", js_rope_pair), FN("attention", js_attention), FN("attentionBatch", js_attention_batch), FN("storeKV", js_kv_store), FN("storeKVPair", js_kv_store_pair), FN("swiglu", js_swiglu), FN("geglu", js_geglu),
    FN("gelu", js_gelu), FN("add", js_add), FN("softmax", js_softmax), FN("argmax", js_argmax), FN("topKHeap", js_topk_heap), FN("dequantize", js_dequantize),
    FN("mapFile", js_map_file), FN("setThreads", js_set_threads), FN("info", js_info), FN("rowBytes", js_row_bytes),
    FN("readBandwidth", js_read_bandwidth), FN("gemm", js_gemm), FN("attentionTrain", js_attention_train),
    FN("attentionTrainBackward", js_attention_train_backward), FN("gatedBackward", js_gated_backward),
    FN("rmsNormBackward", js_rms_norm_backward), FN("ropeBackward", js_rope_backward), FN("crossEntropy", js_cross_entropy),
    FN("crossEntropyBackward", js_cross_entropy_backward), FN("adamw", js_adamw), FN("sumSquares", js_sum_squares),
    FN("scale", js_scale), FN("accumulate", js_accumulate), FN("planBegin", js_plan_begin), FN("planEnd", js_plan_end), FN("planRun", js_plan_run),
#undef FN
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
