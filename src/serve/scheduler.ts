// The serving loop: a fixed set of slots, each with its own KV cache, and a bounded queue of
// requests waiting for one. Every tick runs one batched forward (every matrix product reads the
// weights once for all its rows): one row for each request that is generating, and, within a
// budget of rows per tick, the next part of the prompts still being read, first come first
// served. Then it yields to the event loop, so sockets, timers and new requests are served
// between ticks.
//
// A model that answers asynchronously (webgpu: forwardBatchAsync, one submission for the whole
// tick) runs the same tick, awaiting the forward: the event loop runs meanwhile (requests are
// read and admitted to idle slots), but a slot whose rows are in flight is not given away or
// truncated until the forward is back (an abort then ends it at the next tick).
//
// A request's answer does not depend on the others in the batch: each has its own cache and
// its own seeded sampler, and the kernels compute every row the same way whatever the rows
// around it (docs/serve.md, "Answers independent of load").
//
// Prompts that start alike are read once: a request about to read its prompt first takes the
// longest start of it that any slot's cache holds (its own slot's, kept from its last request,
// or a copy of another slot's rows: bit for bit what reading those tokens would write, for the
// same reason), the whole prompt with its first token's logits when a slot has just read the
// same prompt; and a request whose next tokens an earlier one is reading in this tick waits for
// them to be copied in the next tick instead of computing them too.

import type { LanguageModel } from "../archs/model.js";
import type { KVCache } from "../blocks/kvCache.js";
import { Generation, type FinishReason, type TokenFilter } from "../engines/generate.js";
import { argmax, topIds, type SamplingOptions } from "../engines/sampling.js";
import { logSumExp } from "../primitives/softmax.js";
import { ApiError } from "./errors.js";
import type { TokenLogprob } from "./textStream.js";
import { trace, tracing } from "./trace.js";

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
  /** Prompt tokens not computed: found in the slot's cache (a shared start with its last
   *  request) or copied from another slot's. */
  cachedTokens: number;
  /** Of those, the tokens copied from another slot's cache. */
  sharedTokens: number;
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
  /**
   * Rows per forward: one per generating request, the rest for prompts (so a long prompt is
   * read over several ticks and never stalls the others for long). At least one prompt row runs
   * per tick whatever the number of generating requests.
   */
  batchTokens?: number;
  /**
   * Whether the server took in connections or requests since it was last asked. While it did,
   * the next tick waits for one more turn of the event loop (at most MAX_ARRIVAL_TURNS in a row),
   * so that requests sent together are read and start together.
   */
  arriving?: () => boolean;
}

/**
 * Node accepts one new connection per turn of the event loop, and a tick blocks the loop: 16
 * clients connecting at once were admitted one per tick, the last after 16 ticks (its first
 * token ~1 s late at 16 clients). Letting the loop turn while connections keep arriving admits
 * them all before the next tick; the bound keeps a flood of connections from stalling the others.
 */
const MAX_ARRIVAL_TURNS = 64;

export const DEFAULT_BATCH_TOKENS = 64;

interface Active {
  job: Job;
  resolve(r: JobResult): void;
  reject(e: unknown): void;
  /** Admission order: prompts are read first come, first served. */
  order: number;
  /** Prompt positions already in the cache. */
  read: number;
  cachedTokens: number;
  sharedTokens: number;
  generation?: Generation;
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
  /** Idle: the logits that follow the last position of cachedIds, when its request generated. */
  logits?: Float32Array;
  /** The latest row of logits handed to this slot's request (copied out of the tick's array,
   *  which the next tick writes over; its request reads it until the next row comes). */
  row?: Float32Array;
  /** Its rows are in a forward not yet back (or about to run): its cache must not change. */
  inFlight?: boolean;
}

interface Waiting {
  job: Job;
  resolve(r: JobResult): void;
  reject(e: unknown): void;
  onAbort(): void;
}

/** One sequence's rows in a tick's forward. */
interface Row {
  slot: Slot;
  a: Active;
  ids: number[];
  /** A generated token (else a part of the prompt). */
  decode: boolean;
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

/** The prompt positions a cache holding `ids` spares: its shared start, less the last prompt
 *  token (always read again: its logits give the first token). */
function reusable(ids: readonly number[], prompt: readonly number[]): number {
  return Math.min(commonPrefix(ids, prompt), prompt.length - 1);
}

export class Scheduler {
  private slots: Slot[];
  private queue: Waiting[] = [];
  private ticking = false;
  /** The array every synchronous tick's forward writes its logits into (tickLogits). */
  private tickArray: Float32Array | null = null;
  /** Event-loop turns the next tick has waited for arriving requests. */
  private arrivalTurns = 0;
  private closed = false;
  private draining = false;
  private admitted = 0;
  private readonly batchTokens: number;
  private idleWaiters: (() => void)[] = [];
  /** Counters for /health. */
  completed = 0;
  aborted = 0;

  constructor(private model: LanguageModel, readonly opts: SchedulerOptions) {
    this.slots = Array.from({ length: opts.parallel }, (_, index) => ({ index, cachedIds: [] }));
    this.batchTokens = opts.batchTokens ?? DEFAULT_BATCH_TOKENS;
  }

  /** Start a job (or queue it). Throws a 503 ApiError, synchronously, when the queue is full. */
  submit(job: Job): Promise<JobResult> {
    if (this.closed || this.draining) throw new ApiError(503, "the server is shutting down; send the request to another replica", "server_error", null, "unavailable");
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
          if (i !== -1) { this.queue.splice(i, 1); this.aborted++; resolve(this.abortedResult(job)); this.notifyIdle(); }
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

  /** KV-cache positions filled (in the busy slots, and in all slots counting kept prefixes) and allocated. */
  cacheUse(): { busy: number; kept: number; capacity: number } {
    let busy = 0, kept = 0;
    for (const s of this.slots) {
      const n = s.cache?.length ?? 0;
      kept += n;
      if (s.active) busy += n;
    }
    return { busy, kept, capacity: this.opts.parallel * this.opts.contextSize };
  }

  /**
   * Touch everything the first request would: allocate every slot's cache, run the weights
   * through a one-row forward and a batch of one row per slot (page in the memory-mapped file,
   * compile the code paths of both shapes; on webgpu: upload the weights, compile the shaders),
   * then forget those positions. Synchronous on a synchronous model (nothing is awaited).
   */
  async warmUp(token = 0): Promise<void> {
    for (const s of this.slots) s.cache ??= this.model.newCache(this.opts.contextSize);
    const batch = this.slots.map((s) => ({ ids: Int32Array.of(token), cache: s.cache! }));
    if (this.model.forwardBatchAsync) {
      await this.model.forwardBatchAsync(batch.slice(0, 1));
      this.slots[0].cache!.truncate(0);
      await this.model.forwardBatchAsync(batch);
    } else {
      const one = this.model.forward(Int32Array.of(token), this.slots[0].cache!, "last");
      argmax(one.data);
      this.slots[0].cache!.truncate(0);
      this.model.forwardBatch(batch);
    }
    for (const s of this.slots) s.cache!.truncate(0);
  }

  /** Refuse new jobs (503) and let the running and waiting ones finish; resolves when none is left. */
  drain(): Promise<void> {
    this.draining = true;
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.notifyIdle();
    });
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Refuse new jobs and end the running and waiting ones. */
  close(): void {
    this.closed = true;
    for (const w of this.queue.splice(0)) w.resolve(this.abortedResult(w.job));
    for (const s of this.slots) if (s.active) this.release(s, "aborted");
    this.notifyIdle();
  }

  private notifyIdle(): void {
    if (this.queue.length > 0 || this.slots.some((s) => s.active)) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Give waiting jobs the idle slots. Any slot's cache can lend a job its prompt's start (a
   * copy), so the choice is about what the slot loses: the idle slot that drops the fewest of
   * the positions it holds (an empty one, or the one whose cache the prompt continues: a chat's
   * next turn), then the one that holds most of the prompt itself (nothing to copy).
   */
  private fill(): void {
    while (this.queue.length > 0) {
      const idle = this.slots.filter((s) => !s.active);
      if (idle.length === 0) break;
      const w = this.queue.shift()!;
      w.job.signal.removeEventListener("abort", w.onAbort);
      const prompt = w.job.prompt;
      let best = idle[0], bestOwn = reusable(best.cachedIds, prompt);
      for (const s of idle.slice(1)) {
        const own = reusable(s.cachedIds, prompt);
        const lost = s.cachedIds.length - own, bestLost = best.cachedIds.length - bestOwn;
        if (lost < bestLost || (lost === bestLost && own > bestOwn)) { best = s; bestOwn = own; }
      }
      this.start(best, w, bestOwn);
    }
    this.schedule();
  }

  private start(slot: Slot, w: Waiting, own: number): void {
    slot.cache ??= this.model.newCache(this.opts.contextSize);
    // Keep the shared start (never the last prompt token: its logits are needed). A
    // sliding-window layer may no longer hold what continuing from there needs: truncate says
    // how much is kept (0: read the prompt again from the start).
    const keep = slot.cache.truncate(own);
    slot.cachedIds.length = keep;
    const active: Active = {
      job: w.job, resolve: w.resolve, reject: w.reject, order: this.admitted++, read: keep, cachedTokens: keep, sharedTokens: 0,
      t0: performance.now(), t1: 0,
      // In flight: the next tick sees the aborted signal and ends it (plan()).
      onAbort: () => { if (!slot.inFlight) this.release(slot, "aborted"); },
    };
    slot.active = active;
    slot.logits = undefined;
    w.job.signal.addEventListener("abort", active.onAbort, { once: true });
    this.share(slot, active); // now, before the slot lending it is given to another job
  }

  /**
   * Copy into the slot's cache the longest start of its prompt that another slot's cache holds
   * beyond what it read already (busy or idle, its positions written by forwards already run or
   * submitted; the copy is bit for bit what reading them would write). A slot that holds exactly
   * this prompt and the logits that follow it (its request has read the prompt and not yet fed
   * a token back, or ended so) lends the whole prompt and a copy of those logits: the request
   * then generates without reading a row.
   */
  private share(slot: Slot, a: Active): void {
    const prompt = a.job.prompt;
    let from: Slot | undefined, n = a.read, logits: Float32Array | undefined;
    for (const d of this.slots) {
      if (d === slot || !d.cache) continue;
      const after = d.cachedIds.length === prompt.length ? this.logitsAfter(d) : undefined;
      const whole = after !== undefined && commonPrefix(d.cachedIds, prompt) === prompt.length;
      const m = whole ? prompt.length : reusable(d.cachedIds, prompt);
      if (m > n) { from = d; n = m; logits = whole ? after : undefined; }
    }
    if (!from || !slot.cache!.copyPrefix(from.cache!, n)) return;
    a.cachedTokens += n - a.read;
    a.sharedTokens += n - a.read;
    a.read = n;
    slot.cachedIds = prompt.slice(0, n);
    if (logits) this.begin(slot, a, logits.slice());
  }

  /** The logits that follow a slot's cachedIds, when it has them. */
  private logitsAfter(d: Slot): Float32Array | undefined {
    if (!d.active) return d.logits;
    const g = d.active.generation;
    return g && g.cachedIds === d.cachedIds ? g.currentLogits : undefined;
  }

  private schedule(): void {
    if (this.ticking || !this.slots.some((s) => s.active)) return;
    this.ticking = true;
    setImmediate(() => this.tick());
  }

  /** One batched forward: a token for every generating request, then prompt rows within the budget. */
  private tick(): void {
    if (this.opts.arriving?.() && this.arrivalTurns < MAX_ARRIVAL_TURNS) {
      this.arrivalTurns++;
      setImmediate(() => this.tick());
      return;
    }
    trace("tick", this.arrivalTurns);
    this.arrivalTurns = 0;
    // `ticking` stays set until the forward is back, so no second tick starts meanwhile.
    const rows = this.plan();
    if (rows.length === 0) return this.endTick();
    const batch = rows.map((r) => ({ ids: Int32Array.from(r.ids), cache: r.slot.cache! }));
    // The rows' caches must not change (a slot given to another job) until the forward is back.
    for (const r of rows) r.slot.inFlight = true;
    if (tracing) trace("plan", `${rows.length} seqs ${batch.reduce((n, b) => n + b.ids.length, 0)} rows`);
    if (this.model.forwardBatchAsync) {
      trace("forward");
      this.model.forwardBatchAsync(batch).then(
        (logits) => { trace("back"); this.land(rows); this.advanceAll(rows, logits.data); },
        (e) => { this.land(rows); this.failAll(rows, e); },
      ).finally(() => this.endTick());
      return;
    }
    // plan() handed this tick's tokens to their clients, but Node's HTTP responses hold their
    // writes until process.nextTick (they cork the socket to send a chunk's pieces together): a
    // forward run now would keep every token in its socket until the forward ends. Run it after
    // those writes, so a token leaves before the forward that follows it.
    process.nextTick(() => {
      trace("forward");
      let logits: Float32Array | undefined, error: unknown;
      try {
        logits = this.model.forwardBatch(batch, this.tickLogits(batch.length)).data;
      } catch (e) {
        error = e;
      }
      trace("back");
      this.land(rows);
      try {
        if (logits) this.advanceAll(rows, logits); else this.failAll(rows, error);
      } catch (e) {
        this.failAll(rows, e);
      }
      this.endTick();
    });
  }

  private endTick(): void {
    this.ticking = false;
    this.schedule();
  }

  /** The forward is back: the slots' caches may change again. */
  private land(rows: Row[]): void {
    for (const r of rows) r.slot.inFlight = false;
  }

  private advanceAll(rows: Row[], logits: Float32Array): void {
    const V = this.model.nVocab;
    rows.forEach((r, i) => {
      const row = (r.slot.row ??= new Float32Array(V));
      row.set(logits.subarray(i * V, (i + 1) * V));
      this.advance(r, row);
    });
  }

  /** One array for every tick's logits (forward's out: a new array per step costs a single
   *  sequence's decode 2–5%, its allocation). */
  private tickLogits(rows: number): Float32Array {
    const n = rows * this.model.nVocab;
    if (!this.tickArray || this.tickArray.length < n) this.tickArray = new Float32Array(this.slots.length * this.model.nVocab);
    return this.tickArray.subarray(0, n);
  }

  private failAll(rows: Row[], e: unknown): void {
    for (const r of rows) if (r.slot.active === r.a) this.fail(r.slot, e);
  }

  /** The rows of this tick, decided request by request (a request may also end here). */
  private plan(): Row[] {
    const rows: Row[] = [];
    const reading: { slot: Slot; a: Active }[] = [];
    for (const slot of this.slots) {
      const a = slot.active;
      if (!a) continue;
      if (a.job.signal.aborted) { this.release(slot, "aborted"); continue; }
      // What other slots read since it started (the whole prompt: it generates from here). Done
      // slot by slot with the sampling, so each first token leaves as soon as its own copy is
      // made, not after every waiting request's copy.
      if (!a.generation) this.share(slot, a); // may start its generation (a whole prompt copied)
      if (!a.generation) { reading.push({ slot, a }); continue; }
      try {
        const id = a.generation.next(); // samples, emits the token (the client sees it now)
        if (id === null) this.release(slot, a.generation.finishReason);
        else rows.push({ slot, a, ids: [id], decode: true });
      } catch (e) {
        this.fail(slot, e);
      }
    }
    // Prompts first come, first served: the earliest gets its first token soonest.
    let budget = Math.max(1, this.batchTokens - rows.length);
    reading.sort((x, y) => x.a.order - y.a.order);
    /** The prompt rows read in this tick: positions [0, end) of `prompt` once it is back. */
    const readNow: { prompt: readonly number[]; end: number }[] = [];
    for (const { slot, a } of reading) {
      if (budget === 0) break;
      if (slot.active !== a) continue; // ended above (a failed forward releases every row)
      if (readNow.some((r) => this.worthWaiting(a, r))) continue;
      const n = Math.min(budget, a.job.prompt.length - a.read);
      rows.push({ slot, a, ids: a.job.prompt.slice(a.read, a.read + n), decode: false });
      readNow.push({ prompt: a.job.prompt, end: a.read + n });
      budget -= n;
    }
    return rows;
  }

  /**
   * Whether a request should wait a tick for an earlier one's prompt rows (read in this tick) and
   * copy them then, rather than compute them too: when they are at least half of what it has
   * left to read, or all of it (the same prompt, whose last row the earlier one reads now: its
   * logits come with the copy). Then 16 requests with one prompt read it once, and all start
   * generating in the next tick; a prompt that only starts alike (a few tokens) does not wait.
   */
  private worthWaiting(a: Active, earlier: { prompt: readonly number[]; end: number }): boolean {
    const prompt = a.job.prompt;
    const whole = earlier.end === prompt.length && earlier.prompt.length === prompt.length && commonPrefix(earlier.prompt, prompt) === prompt.length;
    const gain = (whole ? prompt.length : Math.min(reusable(earlier.prompt, prompt), earlier.end)) - a.read;
    return gain > 0 && 2 * gain >= prompt.length - a.read;
  }

  /** Hand a row's logits to its request: the next token's distribution, or the prompt read on. */
  private advance(r: Row, logits: Float32Array): void {
    const { slot, a } = r;
    if (slot.active !== a) return;
    if (r.decode) {
      a.generation!.accept(logits);
      return;
    }
    a.read += r.ids.length;
    slot.cachedIds.push(...r.ids);
    if (a.read < a.job.prompt.length) return;
    this.begin(slot, a, logits); // the whole prompt is in the cache; its last row's logits give the first token
  }

  /** The whole prompt is in the slot's cache, `logits` the row that follows it: start generating. */
  private begin(slot: Slot, a: Active, logits: Float32Array): void {
    const job = a.job;
    try {
      const g: Generation = new Generation(this.model, job.prompt, {
        maxTokens: job.maxTokens ?? Number.MAX_SAFE_INTEGER, sampling: job.sampling, stopIds: job.stopIds,
        cache: slot.cache!, signal: job.signal, promptLogits: logits, constraint: job.constraint,
        onToken: (id) => job.onToken(id, job.topLogprobs !== undefined ? logprobsOf(g.currentLogits, id, job.topLogprobs) : undefined),
      });
      a.generation = g;
      a.t1 = performance.now();
      slot.cachedIds = g.cachedIds;
    } catch (e) {
      this.fail(slot, e);
    }
  }

  private fail(slot: Slot, e: unknown): void {
    const a = slot.active;
    this.reset(slot);
    if (a) a.reject(e);
    this.fill();
    this.notifyIdle();
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
    slot.logits = g?.currentLogits;
    const now = performance.now();
    if (reason === "aborted") this.aborted++; else this.completed++;
    a.resolve({
      tokens: g ? g.tokens : [], finishReason: reason, promptTokens: a.job.prompt.length, cachedTokens: a.cachedTokens, sharedTokens: a.sharedTokens,
      promptMs: (a.t1 || now) - a.t0, generateMs: a.t1 ? now - a.t1 : 0,
    });
    this.fill();
    this.notifyIdle();
  }

  private reset(slot: Slot): void {
    const a = slot.active;
    if (a) a.job.signal.removeEventListener("abort", a.onAbort);
    slot.active = undefined;
    slot.cachedIds = [];
    slot.logits = undefined;
    slot.cache?.truncate(0);
  }

  private abortedResult(job: Job): JobResult {
    return { tokens: [], finishReason: "aborted", promptTokens: job.prompt.length, cachedTokens: 0, sharedTokens: 0, promptMs: 0, generateMs: 0 };
  }
}
