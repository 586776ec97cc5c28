// A decode step (one new token for each of one or more sequences: a server steps several
// conversations at once) recorded once and then replayed by the backend in one call (Kernels.recordStep; cpu: native/plan.c). A small model's step is a few
// hundred kernel calls; the forward's TypeScript around them, though quick on its own, runs with
// caches that each weight stream has just emptied, and costs 8–11% of the step
// (docs/internals.md, "Decode replay"). A replay runs the same kernels on the same arrays with the
// same arguments, so its logits are the forward's, bit for bit.
//
// What a step changes is written into memory the recorded calls read: the token ids and
// positions (the recorded forward's own ids and positions arrays) and each cache layer's row for
// the step (LayerCache.prepare, which also makes room in sliding-window layers). When the batch's
// caches are not the recorded ones, or a layer's buffers changed (a long prompt read into a
// sliding-window layer), the step runs the forward again and records it anew. A forward that computes anything in
// TypeScript (InferenceOps.computedInScript) is never replayed.

import type { Kernels, StepKV, StepPlan } from "../backends/kernels.js";
import type { InferenceOps } from "../blocks/inferenceOps.js";
import type { KVCache } from "../blocks/kvCache.js";

interface RecordedStep {
  plan: StepPlan;
  /** The sequences' caches, in the batch's order; kv's layers are theirs, cache by cache. */
  caches: readonly KVCache[];
  kv: StepKV;
  ids: Int32Array;
  positions: Int32Array;
  /** Values of the step's logits: sequences × vocab. */
  size: number;
}

export class DecodeReplay {
  /** The latest recorded step by its first sequence's cache (a server's batch changes as
   *  conversations come and go: a new set of caches records anew and replaces it). A recording
   *  holds the other caches' buffers too, until that cache records again or is dropped. */
  private readonly steps = new WeakMap<KVCache, RecordedStep>();
  /** Why this model's steps are not replayed (null: they are, once recorded). */
  refused: string | null = null;

  constructor(private readonly kernels: Required<Pick<Kernels, "recordStep">>) {}

  /**
   * The logits [sequences, vocab] of one token per sequence, each at its cache's next position, by
   * replaying the step recorded for exactly these caches (each then holds one more position), or
   * null when there is none to replay: run the forward through `record` instead. The logits go
   * into `out` when given, else into a new array.
   */
  replay(sequences: readonly { ids: Int32Array; cache: KVCache }[], out?: Float32Array): Float32Array | null {
    const s = this.steps.get(sequences[0].cache);
    if (!s || s.caches.length !== sequences.length || sequences.some((q, i) => q.cache !== s.caches[i])) return null;
    const { keys, values, rows } = s.kv;
    let l = 0;
    for (const { cache } of sequences) {
      cache.reserve(1);
      for (const layer of cache.layers) {
        rows[l] = layer.prepare(cache.length, 1);
        if (layer.keys.bytes !== keys[l] || layer.values.bytes !== values[l]) { // new buffers: record again
          this.steps.delete(sequences[0].cache);
          return null;
        }
        l++;
      }
    }
    sequences.forEach(({ ids, cache }, i) => { s.ids[i] = ids[0]; s.positions[i] = cache.length; });
    // Straight into `out` (a generation's one array for all its steps), else into a new array
    // the caller owns: its allocation costs SmolLM2's decode 2–5% (paired rounds, Ice Lake),
    // hence forward's `out`.
    const into = out ?? new Float32Array(s.size);
    s.plan.run(into);
    for (const { cache } of sequences) cache.length += 1;
    return into;
  }

  /**
   * Run `forward` (one token of each sequence; ops' ids and positions its own arrays) and record it
   * for the next steps of these caches. Returns forward's result.
   */
  record<R>(sequences: readonly { cache: KVCache }[], ops: InferenceOps, ids: Int32Array, forward: () => R, result: (out: R) => Float32Array, vocab: number): R {
    if (this.refused) return forward();
    // Every layer of every sequence's cache, in order; prepare first: it may move a layer's rows.
    const layers = sequences.flatMap(({ cache }) => cache.layers.map((layer) => ({ layer, pos: cache.length })));
    const rows = Int32Array.from(layers, ({ layer, pos }) => layer.prepare(pos, 1));
    const kv: StepKV = {
      keys: layers.map(({ layer }) => layer.keys.bytes), values: layers.map(({ layer }) => layer.values.bytes),
      rowBytes: Float64Array.from(layers, ({ layer }) => layer.rowBytes), rows,
    };
    const logits = new Float32Array(sequences.length * vocab);
    const { out, plan } = this.kernels.recordStep(kv, forward, result, logits);
    if (ops.computedInScript) this.refused = "the forward computes in TypeScript";
    else if (typeof plan === "string") this.refused = plan;
    else this.steps.set(sequences[0].cache, { plan, caches: sequences.map((q) => q.cache), kv, ids, positions: ops.positions, size: logits.length });
    return out;
  }
}
