// The KV-cache decode engine: read the prompt in one batch, then one token at a time,
// each new token attending to the cached keys and values of everything before it.

import type { LanguageModel } from "../archs/model.js";
import type { KVCache } from "../blocks/kvCache.js";
import { EXIT, ToyError } from "../errors.js";
import { adjustLogits, argmax, Sampler, type SamplingOptions } from "./sampling.js";

/**
 * A constraint on which tokens may come next (e.g. a grammar, src/engines/grammar/): it sees
 * every step's logits before sampling and every chosen token after.
 */
export interface TokenFilter {
  /** Set the logits of the tokens that may not come next to -Infinity (stop ids included). */
  maskLogits(logits: Float32Array): void;
  /** The token chosen (a stop id when the answer ends). */
  accept(id: number): void;
  /** Nothing may follow: the answer is complete, generation ends with "stop". */
  readonly complete: boolean;
}

export interface GenerateOptions {
  maxTokens: number;
  sampling: SamplingOptions;
  /** Token ids that end generation (EOS, end of turn); they are not emitted. */
  stopIds?: ReadonlySet<number>;
  /** Called with each generated token; return false to stop. */
  onToken?: (id: number) => boolean | void;
  /** Reuse a cache: the tokens it holds (`cachedIds`) that begin the prompt are not read again. */
  cache?: KVCache;
  cachedIds?: readonly number[];
  /**
   * The whole prompt is already in `cache` (a server read it in its own batches) and these are
   * the logits after its last token: the generation starts from them, with no forward here.
   */
  promptLogits?: Float32Array;
  /** Checked between tokens: stop as soon as it is aborted. */
  signal?: AbortSignal;
  /** Only tokens it allows are sampled (structured output). */
  constraint?: TokenFilter;
}

export type FinishReason = "stop" | "length" | "aborted";

export interface GenerateResult {
  tokens: number[];
  finishReason: FinishReason;
  promptTokensPerS: number;
  tokensPerS: number;
  cache: KVCache;
  /** What the cache holds now, position by position (prompt and generated tokens). */
  cachedIds: number[];
}

/** Length of the common start of two id lists. */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** The tokens of `prompt` the cache does not hold yet (what is kept of opts.cachedIds stays). */
function promptToRead(model: LanguageModel, prompt: readonly number[], cache: KVCache, opts: GenerateOptions): number[] {
  // Keep what the cache already holds of this prompt; always re-read at least the last token.
  const keep = Math.min(commonPrefix(opts.cachedIds ?? [], prompt), prompt.length - 1);
  cache.truncate(opts.cache ? keep : 0);
  if (prompt.length > Math.min(cache.capacity, model.contextLength)) {
    throw new ToyError(`the prompt (${prompt.length} tokens) is longer than the context (${Math.min(cache.capacity, model.contextLength)} tokens)`, EXIT.usage);
  }
  return prompt.slice(cache.length);
}

/** A fresh cache for a generation: prompt + maxTokens positions, at most the context (what it fills
 *  unless the model stops early: on huge pages). */
function cacheFor(model: LanguageModel, prompt: readonly number[], opts: GenerateOptions): KVCache {
  return opts.cache ?? model.newCache(Math.min(model.contextLength, Math.max(prompt.length, prompt.length + opts.maxTokens)), { hugePages: true });
}

/** One generation, token by token: `step()` until it returns false. */
export class Generation {
  readonly tokens: number[] = [];
  finishReason: FinishReason = "length";
  readonly cache: KVCache;
  readonly cachedIds: number[];
  private sampler: Sampler;
  private history: number[];
  private logits: Float32Array;
  private promptMs: number;
  private genStart = 0;
  private genMs = 0;
  private promptRead: number;
  private done = false;
  private pending: number | null = null;
  /** The logits of `step`'s forwards (the prompt's, or promptLogits, are never written over). */
  private stepLogits: Float32Array | null = null;

  constructor(private model: LanguageModel, prompt: readonly number[], private opts: GenerateOptions) {
    if (prompt.length === 0) throw new ToyError("the prompt is empty: give at least one token", EXIT.usage);
    this.cache = cacheFor(model, prompt, opts);
    this.sampler = new Sampler(opts.sampling);
    this.history = [...prompt];
    this.cachedIds = [...prompt];
    if (opts.promptLogits) {
      if (this.cache.length !== prompt.length) throw new Error(`Generation: promptLogits given, but the cache holds ${this.cache.length} positions of a ${prompt.length}-token prompt`);
      this.logits = opts.promptLogits;
      this.promptMs = 0;
      this.promptRead = 0;
      return;
    }
    const fresh = promptToRead(model, prompt, this.cache, opts);
    const t0 = performance.now();
    this.logits = model.forward(Int32Array.from(fresh), this.cache, "last").data;
    this.promptMs = performance.now() - t0;
    this.promptRead = fresh.length;
  }

  /**
   * Sample the next token and emit it. Returns the token, which must then go through the model
   * (`accept` its logits), or null when generation has ended. A server calls this for many
   * generations, runs all their tokens in one batched forward, and hands each its row.
   */
  next(): number | null {
    if (this.done) return null;
    if (this.genStart === 0) this.genStart = performance.now();
    const o = this.opts;
    const end = (reason: FinishReason) => {
      this.finishReason = reason;
      this.done = true;
      this.genMs = performance.now() - this.genStart;
      return null;
    };
    if (o.signal?.aborted) return end("aborted");
    if (this.tokens.length >= o.maxTokens) return end("length");
    if (o.constraint?.complete) return end("stop");
    const id = this.sampler.sample(this.constrained(), this.history);
    o.constraint?.accept(id);
    if (o.stopIds?.has(id)) return end("stop");
    this.tokens.push(id);
    this.history.push(id);
    if (o.onToken?.(id) === false) return end("stop");
    if (this.tokens.length >= o.maxTokens) return end("length");
    if (this.cache.length >= this.cache.capacity) return end("length");
    this.pending = id;
    return id;
  }

  /** This step's logits after logit_bias, penalties and the constraint's mask. */
  private constrained(): Float32Array {
    const o = this.opts;
    let logits = adjustLogits(this.logits, o.sampling, this.tokens);
    if (!o.constraint) return logits;
    if (logits === this.logits) logits = Float32Array.from(logits);
    o.constraint.maskLogits(logits);
    let any = false;
    for (let i = 0; i < logits.length && !any; i++) any = logits[i] !== -Infinity;
    if (!any) throw new ToyError("the constraint allows no token of this vocabulary here (the grammar needs text no token can spell)");
    return logits;
  }

  /** The logits that follow the token `next()` returned (it is now in the cache). */
  accept(logits: Float32Array): void {
    if (this.pending === null) throw new Error("Generation.accept: no token is waiting for its logits");
    this.logits = logits;
    this.cachedIds.push(this.pending);
    this.pending = null;
  }

  /** The distribution the next token is drawn from (the logits after the last accepted token). */
  get currentLogits(): Float32Array {
    return this.logits;
  }

  /** Sample one token and run it through the model. false when generation has ended. */
  step(): boolean {
    const id = this.next();
    if (id === null) return false;
    // Each step's logits replace the last's (read before the next step): one array for all.
    this.stepLogits ??= new Float32Array(this.model.nVocab);
    this.accept(this.model.forward(Int32Array.of(id), this.cache, "last", this.stepLogits).data);
    return true;
  }

  result(): GenerateResult {
    return {
      tokens: this.tokens, finishReason: this.finishReason, cache: this.cache, cachedIds: this.cachedIds,
      promptTokensPerS: this.promptRead / (this.promptMs / 1000),
      tokensPerS: this.tokens.length > 0 && this.genMs > 0 ? this.tokens.length / (this.genMs / 1000) : 0,
    };
  }
}

export function generate(model: LanguageModel, prompt: readonly number[], opts: GenerateOptions): GenerateResult {
  const g = new Generation(model, prompt, opts);
  while (g.step());
  return g.result();
}

/** Let the event loop run: setImmediate in Node (no timer clamp), a macrotask in a browser. */
const yieldToEventLoop = (): Promise<void> =>
  new Promise((r) => (typeof setImmediate === "function" ? setImmediate(r) : setTimeout(r, 0)));

/** The same, yielding to the event loop between tokens (so Ctrl-C, sockets and timers run). */
export async function generateAsync(model: LanguageModel, prompt: readonly number[], opts: GenerateOptions): Promise<GenerateResult> {
  if (model.forwardAsync) return generateOnDevice(model, prompt, opts, model.forwardAsync.bind(model));
  const g = new Generation(model, prompt, opts);
  while (g.step()) await yieldToEventLoop();
  return g.result();
}

/**
 * A model whose forward answers asynchronously (webgpu): the prompt's forward is awaited first,
 * the Generation starts from its logits, and each sampled token's logits are awaited in turn.
 */
async function generateOnDevice(model: LanguageModel, prompt: readonly number[], opts: GenerateOptions,
  forward: NonNullable<LanguageModel["forwardAsync"]>): Promise<GenerateResult> {
  if (prompt.length === 0) throw new ToyError("the prompt is empty: give at least one token", EXIT.usage);
  let promptLogits = opts.promptLogits;
  const cache = cacheFor(model, prompt, opts);
  let promptMs = 0, promptRead = 0;
  if (!promptLogits) {
    const fresh = promptToRead(model, prompt, cache, opts);
    const t0 = performance.now();
    promptLogits = (await forward(Int32Array.from(fresh), cache, "last")).data;
    promptMs = performance.now() - t0;
    promptRead = fresh.length;
  }
  if (model.greedyAsync && plainGreedy(opts)) return greedyOnDevice(model, prompt, opts, cache, promptLogits, promptRead / (promptMs / 1000));
  const g = new Generation(model, prompt, { ...opts, cache, promptLogits });
  for (let id = g.next(); id !== null; id = g.next()) g.accept((await forward(Int32Array.of(id), cache, "last")).data);
  const result = g.result();
  return promptRead > 0 ? { ...result, promptTokensPerS: promptRead / (promptMs / 1000) } : result;
}

/** Greedy decoding with nothing that reads the logits on the host (penalties, biases, grammars). */
function plainGreedy(opts: GenerateOptions): boolean {
  const o = opts.sampling;
  return o.temperature <= 0 && o.repeatPenalty === 1 && !o.presencePenalty && !o.frequencyPenalty
    && (o.logitBias === undefined || o.logitBias.size === 0) && !opts.constraint;
}

/**
 * Greedy decoding where the device picks each token (argmax on the GPU: one id read back per
 * step instead of a row of logits). The same tokens and end conditions as Generation.next with
 * greedy sampling: the first token comes from the prompt's logits.
 */
async function greedyOnDevice(model: LanguageModel, prompt: readonly number[], opts: GenerateOptions, cache: KVCache,
  promptLogits: Float32Array, promptTokensPerS: number): Promise<GenerateResult> {
  const tokens: number[] = [], cachedIds = [...prompt];
  const start = performance.now();
  let finishReason: FinishReason = "length";
  let id = argmax(promptLogits);
  for (;;) {
    if (opts.signal?.aborted) { finishReason = "aborted"; break; }
    if (tokens.length >= opts.maxTokens) break;
    if (opts.stopIds?.has(id)) { finishReason = "stop"; break; }
    tokens.push(id);
    if (opts.onToken?.(id) === false) { finishReason = "stop"; break; }
    if (tokens.length >= opts.maxTokens || cache.length >= cache.capacity) break;
    id = await model.greedyAsync!(Int32Array.of(id), cache);
    cachedIds.push(tokens[tokens.length - 1]);
  }
  const ms = performance.now() - start;
  return { tokens, finishReason, cache, cachedIds, promptTokensPerS, tokensPerS: tokens.length > 0 && ms > 0 ? tokens.length / (ms / 1000) : 0 };
}
