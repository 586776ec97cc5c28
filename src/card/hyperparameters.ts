// The hyperparameter table of an algorithm card: one line per ModelConfig field,
//   <symbol> = <value>        ▷ <what it is>
// shared by the renderer and the parser so that the two cannot drift apart.

import type { ModelConfig } from "../archs/config.js";
import { supportedArchitectures } from "../archs/index.js";

/** How a value is written: whole numbers, float64 numbers, yes/no, or one of a few words. */
export type ValueKind =
  | { type: "count"; min: number }
  | { type: "number"; positive: boolean }
  | { type: "bool" }
  | { type: "word"; words: Record<string, string | null> };

export interface Hyperparameter<C = ModelConfig> {
  symbol: string;
  kind: ValueKind;
  /** The value in the config (rope fields: undefined when rope is null). */
  get(c: C): unknown;
  /** What the line means, with derived numbers for the reader (never parsed). */
  note(c: C): string;
  /** Only on the card when this holds (the RoPE details when there is RoPE). */
  present?(c: C): boolean;
}

export const count = (min = 0): ValueKind => ({ type: "count", min });
export const num = (positive = false): ValueKind => ({ type: "number", positive });
const bool: ValueKind = { type: "bool" };
export const word = (words: Record<string, string | null>): ValueKind => ({ type: "word", words });
const hasRope = (c: ModelConfig) => c.rope !== null;
const hasSlidingRope = (c: ModelConfig) => c.rope?.sliding != null;

/** The words each enumerated field is written as, and the config value each stands for. */
export const WORDS = {
  norm: { RMSNorm: "rms", LayerNorm: "layer" },
  rope: { interleaved: "interleaved", neox: "neox", none: null },
  qkNorm: { head: "head", full: "full", none: null },
  ffn: { SwiGLU: "swiglu", GeGLU: "geglu", MLP: "mlp" },
} as const;

/** The shortest decimal whose float32 rounding is x, when x is a float32 value with a long float64 form. */
function float32Short(x: number): string | undefined {
  if (!Number.isFinite(x) || x === 0 || Math.fround(x) !== x || String(x).length <= 10) return undefined;
  for (let p = 1; p <= 9; p++) {
    const s = x.toExponential(p - 1).replace(/\.?0*e/, "e").replace("e+", "e");
    if (Math.fround(Number(s)) === x) return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e6 ? String(Number(s)) : s;
  }
  return undefined;
}

export const float32Note = (x: number): string => {
  const s = float32Short(x);
  return s === undefined ? "" : ` (float32 ${s})`;
};

/** For notes: a float32 value by its short decimal ("1e-5 (float32)"), anything else exactly. */
export const shortNumber = (x: number): string => {
  const s = float32Short(x);
  return s === undefined ? String(x) : `${s} (float32)`;
};

export const HYPERPARAMETERS: Hyperparameter[] = [
  { symbol: "arch", kind: word(Object.fromEntries(supportedArchitectures().map((a) => [a, a]))), get: (c) => c.arch, note: (c) => `architecture: the ${c.arch} forward pass below` },
  { symbol: "N_V", kind: count(1), get: (c) => c.nVocab, note: () => "vocabulary size" },
  { symbol: "d_e", kind: count(1), get: (c) => c.nEmbd, note: () => "embedding width" },
  { symbol: "L", kind: count(1), get: (c) => c.nLayer, note: () => "layers" },
  { symbol: "H", kind: count(1), get: (c) => c.nHead, note: () => "attention (query) heads" },
  { symbol: "H_kv", kind: count(1), get: (c) => c.nKVHead, note: (c) => `key/value heads: each serves H / H_kv = ${c.nHead / c.nKVHead} query head${c.nHead === c.nKVHead ? "" : "s"}` },
  { symbol: "d_h", kind: count(1), get: (c) => c.headDim, note: (c) => `head size (H · d_h = ${c.nHead * c.headDim}, H_kv · d_h = ${c.nKVHead * c.headDim})` },
  { symbol: "d_ff", kind: count(1), get: (c) => c.nFF, note: (c) => c.ffn.experts > 0 ? "feed-forward width of each expert" : "feed-forward width" },
  { symbol: "ℓ_max", kind: count(1), get: (c) => c.contextLength, note: () => "context length: T ≤ ℓ_max" },
  { symbol: "norm", kind: word(WORDS.norm), get: (c) => c.norm.kind, note: (c) => c.norm.kind === "rms" ? "RMSNorm(x | γ, ε) = γ ⊙ x / √(mean(x²) + ε)" : "LayerNorm(x | γ, β, ε) = γ ⊙ (x − mean(x)) / √(var(x) + ε) + β" },
  { symbol: "ε", kind: num(true), get: (c) => c.norm.eps, note: (c) => `norm epsilon${float32Note(c.norm.eps)}` },
  { symbol: "rope", kind: word(WORDS.rope), get: (c) => c.rope?.style ?? null, note: (c) => !c.rope ? "no rotary positions: learned position embeddings W_p" : c.rope.style === "interleaved" ? "rotary positions on pairs (2i, 2i+1)" : "rotary positions on pairs (i, i + d_rot/2) (NEOX)" },
  { symbol: "θ", kind: num(true), get: (c) => c.rope?.base, note: () => "RoPE base", present: hasRope },
  { symbol: "d_rot", kind: count(2), get: (c) => c.rope?.dims, note: (c) => c.rope && c.rope.dims === c.headDim ? "rotated dimensions of each head (all of d_h)" : "rotated dimensions of each head (the rest pass through)", present: hasRope },
  { symbol: "s_rope", kind: num(true), get: (c) => c.rope?.freqScale, note: () => "RoPE linear position scale (1 / scaling factor)", present: hasRope },
  { symbol: "θ_swa", kind: num(true), get: (c) => c.rope?.sliding?.base, note: () => "RoPE base on sliding-window layers", present: hasSlidingRope },
  { symbol: "s_rope_swa", kind: num(true), get: (c) => c.rope?.sliding?.freqScale, note: () => "RoPE linear position scale on sliding-window layers", present: hasSlidingRope },
  { symbol: "freq_factors", kind: bool, get: (c) => c.rope?.freqFactors, note: () => "Llama 3 frequency divisors f from rope_freqs.weight", present: hasRope },
  { symbol: "qkv_bias", kind: bool, get: (c) => c.attention.qkvBias, note: () => "q, k, v projections have biases" },
  { symbol: "fused_qkv", kind: bool, get: (c) => c.attention.fusedQKV, note: () => "q, k, v come from one fused projection W_qkv" },
  { symbol: "out_bias", kind: bool, get: (c) => c.attention.outBias, note: () => "attention output projection has a bias" },
  { symbol: "qk_norm", kind: word(WORDS.qkNorm), get: (c) => c.attention.qkNorm, note: (c) => c.attention.qkNorm === "head" ? "RMSNorm of q and k, per head" : c.attention.qkNorm === "full" ? "RMSNorm of q and k over the whole projection" : "no q/k norm (head | full | none)" },
  { symbol: "τ", kind: num(), get: (c) => c.attention.scale, note: (c) => c.attention.scale === 1 / Math.sqrt(c.headDim) ? `attention scale = 1/√d_h = 1/√${c.headDim}` : "attention scale" },
  { symbol: "c_attn", kind: num(), get: (c) => c.attention.softcap, note: (c) => c.attention.softcap > 0 ? "attention logit soft-cap: S ← c_attn · tanh(S / c_attn)" : "attention logit soft-cap (0 = off)" },
  { symbol: "w", kind: count(), get: (c) => c.attention.window, note: (c) => c.attention.window > 0 ? "sliding window: a query sees the last w positions" : "sliding window (0 = none)" },
  { symbol: "window_pattern", kind: count(), get: (c) => c.attention.windowPattern, note: (c) => windowPatternNote(c.attention.windowPattern) },
  { symbol: "ffn", kind: word(WORDS.ffn), get: (c) => c.ffn.kind, note: (c) => c.ffn.experts > 0 ? "feed-forward kind (the experts are SwiGLU)" : "feed-forward kind: SwiGLU | GeGLU | MLP (GELU)" },
  { symbol: "ffn_bias", kind: bool, get: (c) => c.ffn.bias, note: () => "MLP up and down projections have biases" },
  { symbol: "E", kind: count(), get: (c) => c.ffn.experts, note: () => "experts (0 = a dense feed-forward)" },
  { symbol: "k", kind: count(), get: (c) => c.ffn.expertsUsed, note: () => "experts each token uses" },
  { symbol: "s_e", kind: num(), get: (c) => c.embedScale, note: (c) => c.embedScale === Math.sqrt(c.nEmbd) && c.embedScale !== 1 ? `embedding multiplier = √d_e = √${c.nEmbd}` : "embedding multiplier" },
  { symbol: "post_norms", kind: bool, get: (c) => c.postNorms, note: () => "RMSNorm after attention and after the feed-forward too" },
  { symbol: "c_out", kind: num(), get: (c) => c.finalSoftcap, note: (c) => c.finalSoftcap > 0 ? "final logit soft-cap: Z ← c_out · tanh(Z / c_out)" : "final logit soft-cap (0 = off)" },
  { symbol: "tied_output", kind: bool, get: (c) => c.tiedOutput, note: () => "the unembedding is the token embedding: W_u = W_e" },
];

function windowPatternNote(p: number): string {
  return p === 0 ? "layers with the window: all (p > 0: l mod p < p − 1)" : `layers with the window: l mod ${p} < ${p - 1} (0 = all)`;
}

/** A value as the card writes it: numbers by String (the shortest form that reads back to the same float64). */
export function formatValue(kind: ValueKind, value: unknown): string {
  switch (kind.type) {
    case "count":
    case "number":
      return String(value);
    case "bool":
      return value ? "yes" : "no";
    case "word":
      return Object.entries(kind.words).find(([, v]) => v === value)?.[0] ?? String(value);
  }
}
