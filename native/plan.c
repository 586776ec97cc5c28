// A decode step recorded once and replayed: the kernel calls of one forward (addon.c records each
// call as it runs it) kept as a list, then run again by one call per token. A small model's decode
// step is ~450 kernel calls; between them the forward's JavaScript and the Node-API crossings cost
// 8–11% of the step, mostly in cache misses after each weight stream (docs/internals.md, "Decode
// replay"). Replaying runs the same kernels on the same arguments, so the bits are the same.
//
// What changes from one step to the next is in memory the plan reads, not in its arguments: the
// token ids and positions (the recorded forward's own ids and positions arrays) and, per KV-cache
// layer of each sequence of the step (a "layer" below), the row the step writes (`rows`, set by
// the caches before each step). The caches' calls (storeKVPair, attention, attentionBatch) are
// bound to their layer when recorded, and only when their arguments are exactly what that row
// gives: anything else makes the plan invalid.
#include <stdlib.h>
#include <string.h>
#include "toy.h"

struct toy_plan {
  toy_plan_cmd_t *cmd;
  int n, cap;
  const char *invalid;   // why the recording cannot be replayed (NULL: it can)
  int nLayers;
  const uint8_t **keys, **values;
  const double *rowBytes;
  const int32_t *rows;   // this step's row of each layer (written by the cache before each step)
  float *out;            // where the step's output goes now (plan_output), nOut floats
  size_t nOut;
};

_Thread_local toy_plan_t *toy_recording = NULL; // per JavaScript thread (each records its own)

toy_plan_t *plan_begin(int nLayers, const uint8_t **keys, const uint8_t **values, const double *rowBytes, const int32_t *rows) {
  toy_plan_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nLayers = nLayers;
  p->keys = malloc(sizeof *p->keys * (size_t)(nLayers ? nLayers : 1));
  p->values = malloc(sizeof *p->values * (size_t)(nLayers ? nLayers : 1));
  if (!p->keys || !p->values) { plan_free(p); return NULL; }
  memcpy(p->keys, keys, sizeof *keys * (size_t)nLayers);
  memcpy(p->values, values, sizeof *values * (size_t)nLayers);
  p->rowBytes = rowBytes;
  p->rows = rows;
  return p;
}

void plan_free(toy_plan_t *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) { free(p->cmd[i].segs); free(p->cmd[i].segLayer); }
  free(p->cmd); free(p->keys); free(p->values); free(p);
}

const char *plan_invalid(const toy_plan_t *p) { return p->invalid; }

void plan_refuse(toy_plan_t *p, const char *why) { if (!p->invalid) p->invalid = why; }

toy_plan_cmd_t *plan_add(toy_plan_t *p, int op) {
  if (p->invalid) return NULL;
  if (p->n == p->cap) {
    const int cap = p->cap ? 2 * p->cap : 512;
    toy_plan_cmd_t *c = realloc(p->cmd, sizeof *c * (size_t)cap);
    if (!c) { plan_refuse(p, "out of memory"); return NULL; }
    p->cmd = c; p->cap = cap;
  }
  toy_plan_cmd_t *c = &p->cmd[p->n++];
  memset(c, 0, sizeof *c);
  c->op = op;
  c->layer = -1;
  return c;
}

/** The layer whose keys and values are k and v, or -1. */
static int layer_of(const toy_plan_t *p, const void *k, const void *v) {
  for (int l = 0; l < p->nLayers; l++) if (p->keys[l] == k && p->values[l] == v) return l;
  return -1;
}

// Binds the step's KV-cache calls to their layer: storeKVPair writes at rows[l] · rowBytes[l]
// (i[1]), attention's first query is at rows[l] (i[1]) and it sees rows[l] + T keys (i[2]).
void plan_bind_kv(toy_plan_t *p, toy_plan_cmd_t *c) {
  const int l = layer_of(p, c->p[2], c->p[3]);
  if (l < 0) { plan_refuse(p, "a KV-cache call on memory that is not one of the caches' layers"); return; }
  c->layer = l;
  const int64_t row = p->rows[l];
  const int ok = c->op == OP_KV_PAIR ? (double)c->i[1] == (double)row * p->rowBytes[l]
                                     : c->i[1] == row && c->i[2] == row + c->i[0];
  if (!ok) plan_refuse(p, "a KV-cache call at another row than its layer's");
}

// An attentionBatch: each sequence's first query is at its layer's row and sees row + T keys.
void plan_bind_segs(toy_plan_t *p, toy_plan_cmd_t *c, const toy_att_seg_t *segs) {
  const int64_t n = c->i[0];
  c->segs = malloc(sizeof *segs * (size_t)n);
  c->segLayer = malloc(sizeof *c->segLayer * (size_t)n);
  if (!c->segs || !c->segLayer) { plan_refuse(p, "out of memory"); return; }
  memcpy(c->segs, segs, sizeof *segs * (size_t)n);
  for (int64_t s = 0; s < n; s++) {
    const int l = layer_of(p, segs[s].k, segs[s].v);
    if (l < 0) { plan_refuse(p, "a KV-cache call on memory that is not one of the caches' layers"); return; }
    if (segs[s].pos0 != p->rows[l] || segs[s].nKeys != p->rows[l] + segs[s].T) { plan_refuse(p, "a KV-cache call at another row than its layer's"); return; }
    c->segLayer[s] = l;
  }
}

/** Pointers into from[0..n) now point at the same places of to. */
static void plan_remap(toy_plan_t *p, const float *from, size_t n, float *to) {
  for (int i = 0; i < p->n; i++) {
    toy_plan_cmd_t *c = &p->cmd[i];
    for (int j = 0; j < TOY_PLAN_PTRS; j++) {
      const char *q = c->p[j];
      if (q >= (const char *)from && q < (const char *)(from + n)) c->p[j] = (char *)to + (q - (const char *)from);
    }
    if (c->op == OP_MULTI) for (int j = 0; j < (int)c->i[2]; j++) {
      const float *q = c->ws[j].out;
      if (q >= from && q < from + n) c->ws[j].out = to + (q - from);
    }
  }
}

// A replay writes its logits into the array its caller reads them from (a generation keeps one
// for all its steps, else a new one each step), not into the recording's own array and then a
// copy. Moving the plan's pointers is one pass over its calls, only when the array changes. The previous array may be gone by then:
// its address only picks out the pointers to move (no live array the plan reads overlaps it).
int plan_output(toy_plan_t *p, float *out, size_t n) {
  if (p->out && n != p->nOut) return 0;
  if (p->out && p->out != out) plan_remap(p, p->out, n, out);
  p->out = out;
  p->nOut = n;
  return 1;
}

void plan_run(const toy_plan_t *p) {
  for (int i = 0; i < p->n; i++) {
    const toy_plan_cmd_t *c = &p->cmd[i];
    const int64_t *a = c->i;
    switch (c->op) {
      case OP_MATMUL: {
        const uint8_t *w = c->p[1];
        const size_t len = row_bytes((int)a[0], a[2]) * (size_t)a[1];
        readahead_before(&w, &len, 1);
        k_matmul_packed(c->p[0], c->p[1], (int)a[0], a[1], a[2], a[3], c->p[2], (int)a[4]);
        break;
      }
      case OP_MULTI: {
        const uint8_t *wp[TOY_MM_MULTI_MAX];
        size_t wlen[TOY_MM_MULTI_MAX];
        for (int j = 0; j < (int)a[2]; j++) { wp[j] = c->ws[j].w; wlen[j] = row_bytes(c->ws[j].type, a[0]) * (size_t)c->ws[j].rows; }
        readahead_before(wp, wlen, (int)a[2]);
        k_matmul_multi(c->p[0], (int)a[2], c->ws, a[0], a[1]); // the recorded call computed: so does this one
        break;
      }
      case OP_GET_ROWS: k_get_rows(c->p[0], (int)a[0], a[1], a[2], c->p[1], a[3], c->p[2], (int)a[4]); break;
      case OP_RMS_NORM: k_rms_norm(c->p[0], c->p[1], a[0], a[1], c->f[0], c->p[2]); break;
      case OP_ADD_RMS_NORM:
        k_add(c->p[0], c->p[1], c->p[3], a[0] * a[1]);
        k_rms_norm(c->p[3], c->p[2], a[0], a[1], c->f[0], c->p[4]);
        break;
      case OP_LAYER_NORM: k_layer_norm(c->p[0], c->p[1], c->p[2], a[0], a[1], c->f[0], c->p[3]); break;
      case OP_ROPE_PAIR:
        k_rope(c->p[0], a[0], a[1], a[3], a[4], c->p[2], c->p[3], (int)a[5]);
        k_rope(c->p[1], a[0], a[2], a[3], a[4], c->p[2], c->p[3], (int)a[5]);
        break;
      case OP_ROPE: k_rope(c->p[0], a[0], a[1], a[2], a[3], c->p[1], c->p[2], (int)a[4]); break;
      case OP_KV_PAIR: {
        const size_t off = (size_t)((double)p->rows[c->layer] * p->rowBytes[c->layer]);
        k_kv_store(c->p[0], a[0], (int)a[2], (uint8_t *)c->p[2] + off);
        k_kv_store(c->p[1], a[0], (int)a[2], (uint8_t *)c->p[3] + off);
        break;
      }
      case OP_ATTENTION: {
        const int64_t row = p->rows[c->layer];
        k_attention(c->p[0], c->p[2], c->p[3], (int)a[3], a[0], row, row + a[0], a[4], a[5], a[6], c->f[0], c->f[1], a[7], (int)a[8], c->p[1]);
        break;
      }
      case OP_SWIGLU: k_swiglu(c->p[0], c->p[1], c->p[2], a[0]); break;
      case OP_GEGLU: k_geglu(c->p[0], c->p[1], c->p[2], a[0]); break;
      case OP_ADD: k_add(c->p[0], c->p[1], c->p[2], a[0]); break;
      case OP_GELU: k_gelu(c->p[0], c->p[1], a[0]); break;
      case OP_SOFTMAX: k_softmax(c->p[0], a[0], a[1]); break;
      case OP_ATTENTION_BATCH: {
        for (int64_t s = 0; s < a[0]; s++) {
          const int64_t row = p->rows[c->segLayer[s]];
          c->segs[s].pos0 = row;
          c->segs[s].nKeys = row + c->segs[s].T;
        }
        // Its only failure is memory for the sequences' descriptions, which the recorded call (of
        // as many sequences) already holds: the buffers only grow.
        k_attention_batch(c->p[0], (int)a[1], a[0], c->segs, a[2], a[3], a[4], c->f[0], c->f[1], a[5], (int)a[6], c->p[1]);
        break;
      }
      case OP_SCALE:
        memmove(c->p[1], c->p[0], (size_t)a[0] * sizeof(float));
        k_scale(c->p[1], a[0], c->d);
        break;
    }
  }
}
