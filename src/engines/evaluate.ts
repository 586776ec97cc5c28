// Scoring a text under the model: per-token log-probabilities and perplexity.
// Position i describes the distribution after reading tokens 0..i; it scores token i+1.

import type { LanguageModel } from "../archs/model.js";
import { EXIT, ToyError } from "../errors.js";
import { logSumExp } from "../primitives/index.js";
import { topIds } from "./sampling.js";

export interface PositionScore {
  next: number | null;
  logprob: number | null;
  top: [number, number][];
}

export interface Scores {
  tokens: number[];
  positions: PositionScore[];
  /** Mean negative log-likelihood over the scored tokens. */
  nll: number;
  perplexity: number;
  tokensScored: number;
}

export interface ScoreOptions {
  topK: number;
  /** Tokens per forward batch (bounds the memory of the logits). */
  batch?: number;
  onProgress?: (done: number, total: number) => void;
}

/** Score `ids` from an empty cache: every token after the first. */
export function scoreTokens(model: LanguageModel, ids: number[], opts: ScoreOptions): Scores {
  if (ids.length === 0) throw new ToyError("nothing to evaluate: the input has no tokens", EXIT.usage);
  if (ids.length > model.contextLength) {
    throw new ToyError(`the input (${ids.length} tokens) is longer than the context (${model.contextLength} tokens); use --window`, EXIT.usage);
  }
  const cache = model.newCache(ids.length);
  const batch = opts.batch ?? 256;
  const positions: PositionScore[] = [];
  let nllSum = 0;
  for (let start = 0; start < ids.length; start += batch) {
    const chunk = ids.slice(start, start + batch);
    const logits = model.forward(Int32Array.from(chunk), cache, "all");
    for (let t = 0; t < chunk.length; t++) {
      const i = start + t;
      const row = logits.data.subarray(t * model.nVocab, (t + 1) * model.nVocab);
      const lse = logSumExp(row);
      const next = i + 1 < ids.length ? ids[i + 1] : null;
      const logprob = next === null ? null : row[next] - lse;
      if (logprob !== null) nllSum -= logprob;
      const top = opts.topK > 0 ? topIds(row, opts.topK).map((id): [number, number] => [id, row[id] - lse]) : [];
      positions.push({ next, logprob, top });
    }
    opts.onProgress?.(Math.min(start + batch, ids.length), ids.length);
  }
  const scored = ids.length - 1;
  const nll = scored > 0 ? nllSum / scored : 0;
  return { tokens: ids, positions, nll, perplexity: Math.exp(nll), tokensScored: scored };
}

/**
 * Perplexity by windows: keep the first `maxTokens` tokens, cut them into windows of `window`,
 * score each from an empty cache (every token after the window's first).
 */
export function scoreWindows(model: LanguageModel, ids: number[], opts: ScoreOptions & { window: number; maxTokens?: number }): Scores {
  if (opts.window < 2) throw new ToyError(`--window ${opts.window} is too small (at least 2)`, EXIT.usage);
  if (opts.window > model.contextLength) {
    throw new ToyError(`--window ${opts.window} is larger than the model's context (${model.contextLength} tokens)`, EXIT.usage);
  }
  const kept = ids.slice(0, opts.maxTokens ?? ids.length);
  const nWindows = Math.floor(kept.length / opts.window);
  if (nWindows === 0) throw new ToyError(`the input has ${kept.length} tokens, fewer than one window of ${opts.window}`, EXIT.usage);
  const positions: PositionScore[] = [];
  let nllSum = 0, scored = 0;
  for (let w = 0; w < nWindows; w++) {
    const win = kept.slice(w * opts.window, (w + 1) * opts.window);
    const s = scoreTokens(model, win, { ...opts, onProgress: undefined });
    positions.push(...s.positions);
    nllSum += s.nll * s.tokensScored;
    scored += s.tokensScored;
    opts.onProgress?.(w + 1, nWindows);
  }
  const tokens = kept.slice(0, nWindows * opts.window);
  const nll = nllSum / scored;
  return { tokens, positions, nll, perplexity: Math.exp(nll), tokensScored: scored };
}
