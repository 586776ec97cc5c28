// Scoring a text under the model: per-token log-probabilities and perplexity.
// Position i describes the distribution after reading tokens 0..i; it scores token i+1.

import type { LanguageModel } from "../archs/model.js";
import type { KVCache } from "../blocks/kvCache.js";
import type { Tensor } from "../tensor/tensor.js";
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
  const s = new TokenScorer(model, ids, opts);
  for (const chunk of s.chunks()) s.add(chunk, model.forward(Int32Array.from(chunk.ids), s.cache, "all"));
  return s.result();
}

/** The same for a model whose forward answers asynchronously (webgpu). */
export async function scoreTokensAsync(model: LanguageModel, ids: number[], opts: ScoreOptions): Promise<Scores> {
  if (!model.forwardAsync) return scoreTokens(model, ids, opts);
  const s = new TokenScorer(model, ids, opts);
  for (const chunk of s.chunks()) s.add(chunk, await model.forwardAsync(Int32Array.from(chunk.ids), s.cache, "all"));
  return s.result();
}

/** The scores of `ids`, batch by batch of forwards from one cache. */
class TokenScorer {
  readonly cache: KVCache;
  private readonly batch: number;
  private readonly positions: PositionScore[] = [];
  private nllSum = 0;

  constructor(private readonly model: LanguageModel, private readonly ids: number[], private readonly opts: ScoreOptions) {
    if (ids.length === 0) throw new ToyError("nothing to evaluate: the input has no tokens", EXIT.usage);
    if (ids.length > model.contextLength) {
      throw new ToyError(`the input (${ids.length} tokens) is longer than the context (${model.contextLength} tokens); use --window`, EXIT.usage);
    }
    this.cache = model.newCache(ids.length, { hugePages: true }); // filled whole
    this.batch = opts.batch ?? 256;
  }

  *chunks(): Generator<{ start: number; ids: number[] }> {
    for (let start = 0; start < this.ids.length; start += this.batch) yield { start, ids: this.ids.slice(start, start + this.batch) };
  }

  add({ start, ids: chunk }: { start: number; ids: number[] }, logits: Tensor): void {
    const { ids, model, opts } = this;
    for (let t = 0; t < chunk.length; t++) {
      const i = start + t;
      const row = logits.data.subarray(t * model.nVocab, (t + 1) * model.nVocab);
      const lse = logSumExp(row);
      const next = i + 1 < ids.length ? ids[i + 1] : null;
      const logprob = next === null ? null : row[next] - lse;
      if (logprob !== null) this.nllSum -= logprob;
      const top = opts.topK > 0 ? topIds(row, opts.topK).map((id): [number, number] => [id, row[id] - lse]) : [];
      this.positions.push({ next, logprob, top });
    }
    opts.onProgress?.(Math.min(start + this.batch, ids.length), ids.length);
  }

  result(): Scores {
    const scored = this.ids.length - 1;
    const nll = scored > 0 ? this.nllSum / scored : 0;
    return { tokens: this.ids, positions: this.positions, nll, perplexity: Math.exp(nll), tokensScored: scored };
  }
}

type WindowOptions = ScoreOptions & { window: number; maxTokens?: number };

/** The first `maxTokens` tokens cut into whole windows of `window` (a usage error when none fits). */
function cutWindows(model: LanguageModel, ids: number[], opts: WindowOptions): number[][] {
  if (opts.window < 2) throw new ToyError(`--window ${opts.window} is too small (at least 2)`, EXIT.usage);
  if (opts.window > model.contextLength) {
    throw new ToyError(`--window ${opts.window} is larger than the model's context (${model.contextLength} tokens)`, EXIT.usage);
  }
  const kept = ids.slice(0, opts.maxTokens ?? ids.length);
  const nWindows = Math.floor(kept.length / opts.window);
  if (nWindows === 0) throw new ToyError(`the input has ${kept.length} tokens, fewer than one window of ${opts.window}`, EXIT.usage);
  return Array.from({ length: nWindows }, (_, w) => kept.slice(w * opts.window, (w + 1) * opts.window));
}

/** The windows' scores as one: their positions in order, the mean NLL over every scored token. */
function joinWindows(windows: number[][], scores: Scores[]): Scores {
  const positions = scores.flatMap((s) => s.positions);
  const scored = scores.reduce((n, s) => n + s.tokensScored, 0);
  const nll = scores.reduce((sum, s) => sum + s.nll * s.tokensScored, 0) / scored;
  return { tokens: windows.flat(), positions, nll, perplexity: Math.exp(nll), tokensScored: scored };
}

/**
 * Perplexity by windows: keep the first `maxTokens` tokens, cut them into windows of `window`,
 * score each from an empty cache (every token after the window's first).
 */
export function scoreWindows(model: LanguageModel, ids: number[], opts: WindowOptions): Scores {
  const windows = cutWindows(model, ids, opts);
  const scores = windows.map((win, w) => {
    const s = scoreTokens(model, win, { ...opts, onProgress: undefined });
    opts.onProgress?.(w + 1, windows.length);
    return s;
  });
  return joinWindows(windows, scores);
}

/** scoreWindows for a model whose forward answers asynchronously (webgpu). */
export async function scoreWindowsAsync(model: LanguageModel, ids: number[], opts: WindowOptions): Promise<Scores> {
  const windows = cutWindows(model, ids, opts);
  const scores: Scores[] = [];
  for (const [w, win] of windows.entries()) {
    scores.push(await scoreTokensAsync(model, win, { ...opts, onProgress: undefined }));
    opts.onProgress?.(w + 1, windows.length);
  }
  return joinWindows(windows, scores);
}
