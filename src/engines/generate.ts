// The KV-cache decode engine: read the prompt in one batch, then one token at a time,
// each new token attending to the cached keys and values of everything before it.

import type { LanguageModel } from "../archs/model.js";
import type { KVCache } from "../blocks/kvCache.js";
import { ToyError } from "../errors.js";
import { Sampler, type SamplingOptions } from "./sampling.js";

export interface GenerateOptions {
  maxTokens: number;
  sampling: SamplingOptions;
  /** Token ids that end generation (EOS, end of turn); they are not emitted. */
  stopIds?: ReadonlySet<number>;
  /** Called with each generated token; return false to stop. */
  onToken?: (id: number) => boolean | void;
  /** Reuse a cache that already holds the start of the prompt (chat sessions). */
  cache?: KVCache;
  /** Checked between tokens: stop as soon as it is aborted. */
  signal?: AbortSignal;
}

export interface GenerateResult {
  tokens: number[];
  finishReason: "stop" | "length" | "aborted";
  promptTokensPerS: number;
  tokensPerS: number;
  cache: KVCache;
}

export function generate(model: LanguageModel, prompt: number[], opts: GenerateOptions): GenerateResult {
  if (prompt.length === 0) throw new ToyError("the prompt is empty: give at least one token");
  const cache = opts.cache ?? model.newCache();
  // With a reused cache, only the part of the prompt it does not hold yet is read.
  const fresh = prompt.slice(cache.length);
  if (fresh.length === 0) throw new ToyError("the cache already holds the whole prompt: nothing to read");
  if (cache.length + fresh.length > cache.capacity) {
    throw new ToyError(`the prompt (${prompt.length} tokens) is longer than the context (${cache.capacity} tokens)`);
  }
  const sampler = new Sampler(opts.sampling);
  const history = [...prompt];
  const tokens: number[] = [];

  let t0 = performance.now();
  let logits = model.forward(Int32Array.from(fresh), cache, "last").data;
  const promptMs = performance.now() - t0;

  t0 = performance.now();
  let finishReason: GenerateResult["finishReason"] = "length";
  while (tokens.length < opts.maxTokens) {
    if (opts.signal?.aborted) { finishReason = "aborted"; break; }
    const id = sampler.sample(logits, history);
    if (opts.stopIds?.has(id)) { finishReason = "stop"; break; }
    tokens.push(id);
    history.push(id);
    if (opts.onToken?.(id) === false) { finishReason = "stop"; break; }
    if (tokens.length >= opts.maxTokens) break;
    if (cache.length >= cache.capacity) { finishReason = "length"; break; }
    logits = model.forward(Int32Array.of(id), cache, "last").data;
  }
  const genMs = performance.now() - t0;
  return {
    tokens, finishReason, cache,
    promptTokensPerS: fresh.length / (promptMs / 1000),
    tokensPerS: tokens.length > 0 ? tokens.length / (genMs / 1000) : 0,
  };
}
