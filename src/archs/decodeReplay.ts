// A decode step (one sequence, one new token) recorded once per KV cache and then replayed by
// the backend in one call (Kernels.recordStep; cpu: native/plan.c). A small model's step is a few
// hundred kernel calls; the forward's TypeScript around them, though quick on its own, runs with
// caches that each weight stream has just emptied, and costs 8–11% of the step
// (docs/internals.md, "Decode replay"). A replay runs the same kernels on the same arrays with the
// same arguments, so its logits are the forward's, bit for bit.
//
// What a step changes is written into memory the recorded calls read: the token id and position
// (the recorded forward's own ids and positions arrays) and each cache layer's row for the step
// (LayerCache.prepare, which also makes room in sliding-window layers). When a layer's buffers
// are no longer the recorded ones (a window layer took new ones, a prefix was copied in), the next
// step runs the forward again and records it anew. A forward that computes anything in
// TypeScript (InferenceOps.computedInScript) is never replayed.

import type { Kernels, StepKV, StepPlan } from "../backends/kernels.js";
import type { InferenceOps } from "../blocks/inferenceOps.js";
import type { KVCache } from "../blocks/kvCache.js";

interface CacheStep {
  plan: StepPlan;
  kv: StepKV;
  ids: Int32Array;
  positions: Int32Array;
  logits: Float32Array;
}

export class DecodeReplay {
  private readonly steps = new WeakMap<KVCache, CacheStep>();
  /** Why this model's steps are not replayed (null: they are, once recorded). */
  refused: string | null = null;

  constructor(private readonly kernels: Required<Pick<Kernels, "recordStep">>) {}

  /**
   * The logits of token `id` at position cache.length by replaying the cache's recorded step (the
   * cache then holds one more position), or null when there is none to replay: run the forward
   * through `record` instead.
   */
  replay(id: number, cache: KVCache): Float32Array | null {
    const s = this.steps.get(cache);
    if (!s) return null;
    const pos = cache.length;
    cache.reserve(1);
    const { keys, values, rows } = s.kv;
    for (let l = 0; l < cache.layers.length; l++) {
      const layer = cache.layers[l];
      rows[l] = layer.prepare(pos, 1);
      if (layer.keys.bytes !== keys[l] || layer.values.bytes !== values[l]) { // new buffers: record again
        this.steps.delete(cache);
        return null;
      }
    }
    s.ids[0] = id;
    s.positions[0] = pos;
    s.plan.run();
    cache.length += 1;
    return s.logits.slice(); // the caller owns what forward returns
  }

  /**
   * Run `forward` (a one-token step of `cache`, ops' ids and positions its own arrays) and record
   * it for the next steps of that cache. Returns forward's result.
   */
  record<R>(cache: KVCache, ops: InferenceOps, ids: Int32Array, forward: () => R, result: (out: R) => Float32Array, vocab: number): R {
    if (this.refused) return forward();
    const pos = cache.length;
    const rows = Int32Array.from(cache.layers, (layer) => layer.prepare(pos, 1)); // first: it may move a layer's rows
    const kv: StepKV = {
      keys: cache.layers.map((l) => l.keys.bytes), values: cache.layers.map((l) => l.values.bytes),
      rowBytes: Float64Array.from(cache.layers, (l) => l.rowBytes), rows,
    };
    const logits = new Float32Array(vocab);
    const { out, plan } = this.kernels.recordStep(kv, forward, result, logits);
    if (ops.computedInScript) this.refused = "the forward computes in TypeScript";
    else if (typeof plan === "string") this.refused = plan;
    else this.steps.set(cache, { plan, kv, ids, positions: ops.positions, logits });
    return out;
  }
}
