// Choosing the next token from logits: greedy, or a draw after repetition penalty, top-k,
// temperature, top-p (nucleus) and min-p filtering, in that order (as llama.cpp's default chain).
// Before the chain, `adjustLogits` applies OpenAI's logit_bias and presence / frequency penalties.

import { cpuBackend } from "../backends/index.js";
import { Rng } from "../data/rng.js";

export interface SamplingOptions {
  /** 0 = greedy (argmax). */
  temperature: number;
  /** Keep the k most likely tokens (0 = all). */
  topK: number;
  /** Keep the smallest set whose probability reaches p (1 = all). */
  topP: number;
  /** Drop tokens less likely than minP × the most likely one (0 = off). */
  minP: number;
  /** Divide positive / multiply negative logits of recently seen tokens (1 = off). */
  repeatPenalty: number;
  /** How many recent tokens the penalty looks at. */
  repeatLastN: number;
  seed: number;
  /** OpenAI's presence_penalty: subtracted once from every token already generated. */
  presencePenalty?: number;
  /** OpenAI's frequency_penalty: subtracted once per time a token was generated. */
  frequencyPenalty?: number;
  /** OpenAI's logit_bias: added to a token's logit (-100 bans it, +100 all but forces it). */
  logitBias?: ReadonlyMap<number, number>;
}

export const DEFAULT_SAMPLING: SamplingOptions = {
  temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1, repeatLastN: 64, seed: 0,
};

/**
 * logit_bias, then OpenAI's penalties over the generated tokens (not the prompt):
 *   logit[t] += bias[t] − count[t] · frequency_penalty − (count[t] > 0) · presence_penalty
 * Returns the logits themselves when nothing applies, else a changed copy.
 */
export function adjustLogits(logits: Float32Array, o: SamplingOptions, generated: readonly number[]): Float32Array {
  const presence = o.presencePenalty ?? 0, frequency = o.frequencyPenalty ?? 0;
  const penalize = (presence !== 0 || frequency !== 0) && generated.length > 0;
  if (!penalize && (o.logitBias === undefined || o.logitBias.size === 0)) return logits;
  const out = Float32Array.from(logits);
  if (o.logitBias) for (const [id, bias] of o.logitBias) if (id < out.length) out[id] += bias;
  if (penalize) {
    const counts = new Map<number, number>();
    for (const id of generated) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, c] of counts) out[id] -= c * frequency + presence;
  }
  return out;
}

/** For a vocabulary-sized Float32Array (1024 entries or more), the native cpu backend's addon where
 *  it is built (its argmax and topKHeap compare eight logits at a time where the JavaScript loops
 *  compare one); else null. */
function nativeFor(x: ArrayLike<number>) {
  if (!(x instanceof Float32Array) || x.length < 1024) return null;
  const cpu = cpuBackend();
  return "error" in cpu ? null : cpu.addon;
}

/** The index of the first largest logit (NaN never wins; a NaN first entry is the answer). A
 *  vocabulary-sized Float32Array goes to the native cpu backend where it is built (the same index:
 *  test/cpu-backend.test.ts). */
export function argmax(logits: ArrayLike<number>): number {
  const addon = nativeFor(logits);
  if (addon?.argmax) return addon.argmax(logits as Float32Array);
  return argmaxLoop(logits);
}

/** argmax's portable loop. */
export function argmaxLoop(logits: ArrayLike<number>): number {
  let best = 0, max = logits[0];
  for (let i = 1, n = logits.length; i < n; i++) {
    const v = logits[i];
    if (v > max) { max = v; best = i; }
  }
  return best;
}

export class Sampler {
  private rng: Rng;
  constructor(readonly opts: SamplingOptions) {
    this.rng = new Rng(opts.seed);
  }

  /** Pick a token from a row of logits, given the tokens seen so far (for the penalty). */
  sample(logitsIn: Float32Array, history: readonly number[] = []): number {
    const o = this.opts;
    let logits: Float32Array = logitsIn;
    if (o.repeatPenalty !== 1 && history.length > 0) {
      logits = Float32Array.from(logitsIn);
      for (const id of new Set(history.slice(-o.repeatLastN))) {
        logits[id] = logits[id] > 0 ? logits[id] / o.repeatPenalty : logits[id] * o.repeatPenalty;
      }
    }
    if (o.temperature <= 0) return argmax(logits);

    // Candidates, most likely first (top-k by partial selection when k is small).
    let ids = topIds(logits, o.topK > 0 ? Math.min(o.topK, logits.length) : logits.length);
    const max = logits[ids[0]];
    let probs = ids.map((id) => Math.exp((logits[id] - max) / o.temperature));
    let total = probs.reduce((a, b) => a + b, 0);

    if (o.topP < 1) {
      let cum = 0, keep = 0;
      while (keep < ids.length && cum < o.topP * total) cum += probs[keep++];
      ids = ids.slice(0, Math.max(1, keep));
      probs = probs.slice(0, ids.length);
    }
    if (o.minP > 0) {
      const cut = o.minP * probs[0];
      const keep = Math.max(1, probs.findIndex((p) => p < cut) === -1 ? probs.length : probs.findIndex((p) => p < cut));
      ids = ids.slice(0, keep);
      probs = probs.slice(0, keep);
    }
    total = probs.reduce((a, b) => a + b, 0);
    let r = this.rng.next() * total;
    let last = ids[0];
    for (let i = 0; i < ids.length; i++) {
      if (probs[i] === 0) continue; // masked out (a logit of -Infinity)
      last = ids[i];
      r -= probs[i];
      if (r < 0) return ids[i];
    }
    return last; // rounding left r just above 0
  }
}

/** The k largest entries' indices, largest first; ties broken by the smaller index. */
export function topIds(x: ArrayLike<number>, k: number): number[] {
  const better = (a: number, b: number) => x[a] > x[b] || (x[a] === x[b] && a < b);
  if (k <= 0) return [];
  if (k >= x.length / 4) {
    return Array.from({ length: x.length }, (_, i) => i).sort((a, b) => (better(a, b) ? -1 : better(b, a) ? 1 : 0)).slice(0, k);
  }
  // A min-heap of the best k seen so far (the worst of them at the root), started from the
  // first k entries. A vocabulary-sized Float32Array goes to the native backend where it is
  // built: the same heap, by the same comparisons (test/cpu-backend.test.ts).
  const heap = new Int32Array(k);
  const addon = nativeFor(x);
  if (addon?.topKHeap) {
    addon.topKHeap(x as Float32Array, k, heap);
    return Array.from(heap).sort((a, b) => (better(a, b) ? -1 : 1));
  }
  const worse = (a: number, b: number) => better(b, a);
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < k && worse(heap[l], heap[m])) m = l;
      if (r < k && worse(heap[r], heap[m])) m = r;
      if (m === i) return;
      const t = heap[i];
      heap[i] = heap[m];
      heap[m] = t;
      i = m;
    }
  };
  for (let i = 0; i < k; i++) heap[i] = i;
  for (let i = (k >> 1) - 1; i >= 0; i--) down(i);
  // Every index in the heap is smaller than i, so i beats the heap's worst exactly when its
  // value is larger: one comparison per entry (a server samples a 49152-token vocabulary per
  // token, so this loop is most of a sampling step).
  let floor = x[heap[0]];
  for (let i = k; i < x.length; i++) {
    if (x[i] > floor) {
      heap[0] = i;
      down(0);
      floor = x[heap[0]];
    }
  }
  return Array.from(heap).sort((a, b) => (better(a, b) ? -1 : 1));
}
