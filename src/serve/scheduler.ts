// The serving loop: a fixed set of slots, each with its own KV cache, and a bounded queue of
// requests waiting for one. Every tick advances each active request by one step — a chunk of
// its prompt, or one generated token — and then yields to the event loop, so sockets, timers
// and new requests are served between tokens. All active requests are stepped in the same
// tick, and all of them share one batched forward (every matrix product reads the weights once).

import type { LanguageModel } from "../archs/model.js";
import type { KVCache } from "../blocks/kvCache.js";
import { Generation, type FinishReason, type TokenFilter } from "../engines/generate.js";
import { topIds, type SamplingOptions } from "../engines/sampling.js";
import { logSumExp } from "../primitives/softmax.js";
import { ApiError } from "./errors.js";
import type { TokenLogprob } from "./textStream.js";

export interface Job {
  prompt: number[];
  /** undefined: until the context is full */
  maxTokens: number | undefined;
  sampling: SamplingOptions;
  stopIds: ReadonlySet<number>;
  /** Only tokens it allows are sampled (structured output, forced tool calls). */
  constraint?: TokenFilter;
  /** Report log-probabilities with this many alternatives (undefined: none). */
  topLogprobs: number | undefined;
  /** Aborting it (the client went away) ends the job and frees its slot at once. */
  signal: AbortSignal;
  /** Each generated token; return false to end the answer here (a stop sequence appeared). */
  onToken(id: number, logprob: TokenLogprob | undefined): boolean | void;
}

export interface JobResult {
  tokens: number[];
  finishReason: FinishReason;
  promptTokens: number;
  /** Prompt tokens found already in the slot's cache (a shared start with its last request). */
  cachedTokens: number;
  promptMs: number;
  generateMs: number;
}

export interface SchedulerOptions {
  /** Requests generating at once (each holds one slot and its KV cache). */
  parallel: number;
  /** Requests that may wait for a slot; beyond that, 503. */
  queueSize: number;
  /** Positions in each slot's KV cache. */
  contextSize: number;
  /** Prompt tokens read per tick (a long prompt does not stall the others). */
  prefillChunk?: number;
}

interface Active {
  job: Job;
  resolve(r: JobResult): void;
  reject(e: unknown): void;
  /** Prompt positions already in the cache. */
  read: number;
  cachedTokens: number;
  generation?: Generation;
  tap: LogitsTap;
  t0: number;
  t1: number;
  onAbort(): void;
}

interface Slot {
  index: number;
  cache?: KVCache;
  /** What the cache holds, position by position. */
  cachedIds: number[];
  active?: Active;
}

interface Waiting {
  job: Job;
  resolve(r: JobResult): void;
  reject(e: unknown): void;
  onAbort(): void;
}

/** The model, remembering the logits of its last forward (to report log-probabilities). */
type LogitsTap = LanguageModel & { lastLogits?: Float32Array };

function tapLogits(model: LanguageModel): LogitsTap {
  const tap = Object.create(model) as LogitsTap;
  tap.forward = (ids, cache, logits) => {
    const out = model.forward(ids, cache, logits);
    tap.lastLogits = out.data;
    return out;
  };
  return tap;
}

/** log p(id) and the k most likely tokens, from one row of logits. */
export function logprobsOf(logits: Float32Array, id: number, k: number): TokenLogprob {
  const lse = logSumExp(logits);
  return { id, logprob: logits[id] - lse, top: k > 0 ? topIds(logits, k).map((t) => ({ id: t, logprob: logits[t] - lse })) : [] };
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

export class Scheduler {
  private slots: Slot[];
  private queue: Waiting[] = [];
  private ticking = false;
  private closed = false;
  private readonly prefillChunk: number;
  /** Counters for /health. */
  completed = 0;
  aborted = 0;

  constructor(private model: LanguageModel, readonly opts: SchedulerOptions) {
    this.slots = Array.from({ length: opts.parallel }, (_, index) => ({ index, cachedIds: [] }));
    this.prefillChunk = opts.prefillChunk ?? 32;
  }

  /** Start a job (or queue it). Throws a 503 ApiError, synchronously, when the queue is full. */
  submit(job: Job): Promise<JobResult> {
    if (this.closed) throw new ApiError(503, "the server is shutting down", "server_error", null, "unavailable");
    if (job.prompt.length === 0) throw new ApiError(400, "the prompt is empty", "invalid_request_error");
    if (job.prompt.length > this.opts.contextSize) {
      throw new ApiError(400, `the prompt (${job.prompt.length} tokens) is longer than the context (${this.opts.contextSize} tokens)`, "invalid_request_error", "messages", "context_length_exceeded");
    }
    const idle = this.slots.some((s) => !s.active);
    if (!idle && this.queue.length >= this.opts.queueSize) {
      throw new ApiError(503, `the server is busy: ${this.opts.parallel} requests are generating and ${this.queue.length} are waiting; try again later`, "server_error", null, "queue_full");
    }
    return new Promise<JobResult>((resolve, reject) => {
      if (job.signal.aborted) return resolve(this.abortedResult(job));
      const waiting: Waiting = {
        job, resolve, reject,
        onAbort: () => {
          const i = this.queue.indexOf(waiting);
          if (i !== -1) { this.queue.splice(i, 1); this.aborted++; resolve(this.abortedResult(job)); }
        },
      };
      job.signal.addEventListener("abort", waiting.onAbort, { once: true });
      this.queue.push(waiting);
      this.fill();
    });
  }

  stats() {
    const busy = this.slots.filter((s) => s.active).length;
    return { slots: this.opts.parallel, slots_busy: busy, slots_idle: this.opts.parallel - busy, queued: this.queue.length, queue_size: this.opts.queueSize, completed: this.completed, aborted: this.aborted };
  }

  /** Refuse new jobs and end the running and waiting ones. */
  close(): void {
    this.closed = true;
    for (const w of this.queue.splice(0)) w.resolve(this.abortedResult(w.job));
    for (const s of this.slots) if (s.active) this.release(s, "aborted");
  }

  /** Give waiting jobs the idle slots: the one whose cache already holds most of the prompt. */
  private fill(): void {
    while (this.queue.length > 0) {
      const idle = this.slots.filter((s) => !s.active);
      if (idle.length === 0) break;
      const w = this.queue.shift()!;
      w.job.signal.removeEventListener("abort", w.onAbort);
      let best = idle[0], bestShared = -1;
      for (const s of idle) {
        const shared = commonPrefix(s.cachedIds, w.job.prompt);
        if (shared > bestShared) { best = s; bestShared = shared; }
      }
      this.start(best, w, bestShared);
    }
    this.schedule();
  }

  private start(slot: Slot, w: Waiting, shared: number): void {
    const prompt = w.job.prompt;
    slot.cache ??= this.model.newCache(this.opts.contextSize);
    // Keep the shared start; always read at least the last prompt token again (its logits are needed).
    const keep = Math.min(shared, prompt.length - 1);
    slot.cache.truncate(keep);
    slot.cachedIds.length = keep;
    const active: Active = {
      job: w.job, resolve: w.resolve, reject: w.reject, read: keep, cachedTokens: keep,
      tap: tapLogits(this.model), t0: performance.now(), t1: 0,
      onAbort: () => this.release(slot, "aborted"),
    };
    slot.active = active;
    w.job.signal.addEventListener("abort", active.onAbort, { once: true });
  }

  private schedule(): void {
    if (this.ticking || !this.slots.some((s) => s.active)) return;
    this.ticking = true;
    setImmediate(() => this.tick());
  }

  /**
   * One step for every active request, all in one batched forward: a chunk of prompt for those
   * still reading, one token for those generating. Each sequence keeps its own cache.
   */
  private tick(): void {
    this.ticking = false;
    const work: { slot: Slot; a: Active; ids: number[]; decode: boolean }[] = [];
    for (const slot of this.slots) {
      const a = slot.active;
      if (!a) continue;
      try {
        const ids = this.nextIds(slot, a);
        if (ids) work.push({ slot, a, ids: ids.ids, decode: ids.decode });
      } catch (e) {
        this.fail(slot, e);
      }
    }
    if (work.length > 0) {
      try {
        const logits = this.model.forwardBatch(work.map((w) => ({ ids: Int32Array.from(w.ids), cache: w.slot.cache! })));
        const V = this.model.nVocab;
        work.forEach((w, i) => {
          const row = logits.data.slice(i * V, (i + 1) * V);
          if (w.decode) {
            w.a.tap.lastLogits = row;
            w.a.generation!.accept(row);
          } else {
            w.a.read += w.ids.length;
            w.slot.cachedIds.push(...w.ids);
          }
        });
      } catch (e) {
        for (const w of work) this.fail(w.slot, e);
      }
    }
    this.schedule();
  }

  private fail(slot: Slot, e: unknown): void {
    const a = slot.active;
    this.reset(slot);
    if (a) a.reject(e);
    this.fill();
  }

  /** What a request runs through the model this tick (null: nothing, it just started or ended). */
  private nextIds(slot: Slot, a: Active): { ids: number[]; decode: boolean } | null {
    const job = a.job, prompt = job.prompt, cache = slot.cache!;
    if (job.signal.aborted) {
      this.release(slot, "aborted");
      return null;
    }
    if (a.read < prompt.length - 1) {
      // Read the prompt, all but its last token, a chunk per tick.
      return { ids: prompt.slice(a.read, Math.min(a.read + this.prefillChunk, prompt.length - 1)), decode: false };
    }
    if (!a.generation) {
      // The last prompt token gives the first token's logits.
      a.generation = new Generation(a.tap, prompt, {
        maxTokens: job.maxTokens ?? Number.MAX_SAFE_INTEGER, sampling: job.sampling, stopIds: job.stopIds,
        cache, cachedIds: slot.cachedIds, signal: job.signal, constraint: job.constraint,
        onToken: (id) => job.onToken(id, job.topLogprobs !== undefined && a.tap.lastLogits ? logprobsOf(a.tap.lastLogits, id, job.topLogprobs) : undefined),
      });
      a.t1 = performance.now();
      slot.cachedIds = a.generation.cachedIds;
      return null;
    }
    const id = a.generation.next();
    if (id === null) {
      this.release(slot, a.generation.finishReason);
      return null;
    }
    return { ids: [id], decode: true };
  }

  /** The job is over: answer it and give its slot (and cache) to the next one waiting. */
  private release(slot: Slot, reason: FinishReason): void {
    const a = slot.active;
    if (!a) return;
    slot.active = undefined;
    a.job.signal.removeEventListener("abort", a.onAbort);
    const g = a.generation;
    if (g) slot.cachedIds = g.cachedIds;
    else slot.cachedIds.length = slot.cache!.length; // stopped while reading the prompt
    const now = performance.now();
    if (reason === "aborted") this.aborted++; else this.completed++;
    a.resolve({
      tokens: g ? g.tokens : [], finishReason: reason, promptTokens: a.job.prompt.length, cachedTokens: a.cachedTokens,
      promptMs: (a.t1 || now) - a.t0, generateMs: a.t1 ? now - a.t1 : 0,
    });
    this.fill();
  }

  private reset(slot: Slot): void {
    const a = slot.active;
    if (a) a.job.signal.removeEventListener("abort", a.onAbort);
    slot.active = undefined;
    slot.cachedIds = [];
    slot.cache?.truncate(0);
  }

  private abortedResult(job: Job): JobResult {
    return { tokens: [], finishReason: "aborted", promptTokens: job.prompt.length, cachedTokens: 0, promptMs: 0, generateMs: 0 };
  }
}
