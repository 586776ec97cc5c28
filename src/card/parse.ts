// Reading an algorithm card back into the ModelConfig it was rendered from. The hyperparameter
// lines carry the values; everything else on the card (input and output, parameters, the
// numbered algorithm) follows from them, and is checked against what they imply, so a card
// whose algorithm disagrees with its hyperparameters is rejected rather than half-believed.

import type { ModelConfig } from "../archs/config.js";
import { UsageError } from "../errors.js";
import { formatValue, HYPERPARAMETERS, type Hyperparameter } from "./hyperparameters.js";
import { CARD_STYLE, NOTE_MARK, renderCard, type CardMeta } from "./render.js";
import { canonicalConfig } from "./canonical.js";

export interface ParsedCard {
  config: ModelConfig;
  meta: CardMeta;
}

/** The configuration a card describes (a UsageError naming the line when it is malformed). */
export function parseCard(text: string, source = "card"): ModelConfig {
  return readCard(text, source).config;
}

const squash = (s: string): string => s.replace(/\s+/g, " ").trim();
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** What reading a card needs to know about one family of models (decoders, ViTs). */
export interface CardKind<C> {
  style: string;
  hyperparameters: Hyperparameter<C>[];
  /** The config the hyperparameter lines give: `get(symbol)` reads a value (failing when it is
   *  missing), `given(symbol)` says whether a line gave it, `fail(symbol, msg)` blames its line. */
  build(get: (symbol: string) => any, given: (symbol: string) => boolean, fail: (symbol: string, msg: string) => never): C;
  arch(c: C): string;
  render(c: C, meta: CardMeta): string;
}

const DECODER_CARD: CardKind<ModelConfig> = {
  style: CARD_STYLE,
  hyperparameters: HYPERPARAMETERS,
  build(get, given, fail) {
    const style = get("rope") as "interleaved" | "neox" | null;
    for (const h of HYPERPARAMETERS) {
      if (h.present && style === null && given(h.symbol)) fail(h.symbol, `${h.symbol} is given but rope = none`);
    }
    const config = canonicalConfig({
      arch: get("arch"),
      nVocab: get("N_V"), nEmbd: get("d_e"), nLayer: get("L"), nHead: get("H"), nKVHead: get("H_kv"), headDim: get("d_h"),
      nFF: get("d_ff"), contextLength: get("ℓ_max"),
      norm: { kind: get("norm"), eps: get("ε") },
      rope: style === null ? null : {
        base: get("θ"), dims: get("d_rot"), style, freqScale: get("s_rope"), freqFactors: get("freq_factors"),
        sliding: given("θ_swa") || given("s_rope_swa") ? { base: get("θ_swa"), freqScale: get("s_rope_swa") } : null,
      },
      attention: {
        qkvBias: get("qkv_bias"), fusedQKV: get("fused_qkv"), outBias: get("out_bias"), qkNorm: get("qk_norm"),
        scale: get("τ"), softcap: get("c_attn"), window: get("w"), windowPattern: get("window_pattern"),
      },
      ffn: { kind: get("ffn"), bias: get("ffn_bias"), experts: get("E"), expertsUsed: get("k") },
      embedScale: get("s_e"), postNorms: get("post_norms"), finalSoftcap: get("c_out"), tiedOutput: get("tied_output"),
    });
    validate(config, fail);
    return config;
  },
  arch: (c) => c.arch,
  render: renderCard,
};

/** A decoder's card (see ./vit.ts for a ViT's). */
export function readCard(text: string, source = "card"): ParsedCard {
  return readCardOf(DECODER_CARD, text, source);
}

export function readCardOf<C>(kind: CardKind<C>, text: string, source = "card"): { config: C; meta: CardMeta } {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const fail = (line: number, message: string): never => {
    throw new UsageError(`${source}:${line}: ${message}`);
  };
  const numbered = lines.map((text, i) => ({ text, n: i + 1 })).filter((l) => l.text.trim() !== "");
  if (numbered.length === 0) fail(1, "empty card (expected a line starting with \"Algorithm:\")");

  // Title: "Algorithm: <arch> — <name>  (decoder-only transformer, …)".
  const title = numbered[0];
  const m = /^Algorithm:\s*(\S+)(.*)$/.exec(title.text.trim());
  if (!m) fail(title.n, `expected the title "Algorithm: ARCH — NAME", got ${JSON.stringify(clip(title.text))}`);
  const titleArch = m![1];
  let rest = m![2].trim();
  if (rest.endsWith(kind.style)) rest = rest.slice(0, -kind.style.length).trim();
  const name = rest.startsWith("—") ? rest.slice(1).trim() : rest === "" ? undefined : fail(title.n, `expected " — NAME" after the architecture, got ${JSON.stringify(clip(rest))}`);

  const hyperStart = numbered.findIndex((l) => l.text.trim() === "Hyperparameters:");
  if (hyperStart < 0) fail(title.n, 'no "Hyperparameters:" section');
  let hyperEnd = numbered.findIndex((l, i) => i > hyperStart && /^Parameters:/.test(l.text.trim()));
  if (hyperEnd < 0) hyperEnd = numbered.length;

  // The hyperparameters: "<symbol> = <value>  ▷ <note>".
  const bySymbol = new Map(kind.hyperparameters.map((h) => [h.symbol, h]));
  const values = new Map<string, { value: unknown; line: number }>();
  for (const { text, n } of numbered.slice(hyperStart + 1, hyperEnd)) {
    const body = text.split(NOTE_MARK)[0].trim();
    const kv = /^(\S+)\s*=\s*(\S+)$/.exec(body);
    if (!kv) fail(n, `expected "SYMBOL = VALUE", got ${JSON.stringify(clip(body))}`);
    const [, symbol, raw] = kv!;
    const h = bySymbol.get(symbol);
    if (!h) fail(n, `unknown hyperparameter "${symbol}" (known: ${kind.hyperparameters.map((x) => x.symbol).join(", ")})`);
    if (values.has(symbol)) fail(n, `${symbol} is given twice (first on line ${values.get(symbol)!.line})`);
    values.set(symbol, { value: parseValue(h!, raw, (msg) => fail(n, msg)), line: n });
  }
  const sectionLine = numbered[hyperStart].n;
  const get = (symbol: string): any => {
    const v = values.get(symbol);
    if (!v) fail(sectionLine, `hyperparameter ${symbol} is missing (${describe(bySymbol.get(symbol)!)})`);
    return v!.value;
  };
  const lineOf = (symbol: string) => values.get(symbol)?.line ?? sectionLine;
  const config = kind.build(get, (symbol) => values.has(symbol), (symbol, msg) => fail(lineOf(symbol), msg));
  if (titleArch !== kind.arch(config)) fail(title.n, `the title names architecture "${titleArch}" but arch = ${kind.arch(config)} (line ${lineOf("arch")})`);

  // Everything else must be what these hyperparameters give.
  const expected = kind.render(config, { name }).split("\n").filter((l) => l.trim() !== "");
  const expHyper = expected.indexOf("Hyperparameters:");
  const expParams = expected.findIndex((l) => l.startsWith("Parameters:"));
  const check = (actual: typeof numbered, wanted: string[], after: number) => {
    wanted.forEach((w, i) => {
      const a = actual[i];
      if (!a) fail(after, `the card ends early; expected next: ${JSON.stringify(squash(w))}`);
      if (squash(a.text) !== squash(w)) {
        fail(a.n, `${JSON.stringify(clip(squash(a.text)))} does not follow from the hyperparameters; expected ${JSON.stringify(squash(w))}`);
      }
    });
    if (actual.length > wanted.length) fail(actual[wanted.length].n, `unexpected line after the ${after === 0 ? "header" : "algorithm"}: ${JSON.stringify(clip(actual[wanted.length].text))}`);
  };
  check(numbered.slice(1, hyperStart), expected.slice(1, expHyper), 0);
  if (hyperEnd === numbered.length) fail(numbered[numbered.length - 1].n, 'no "Parameters:" section after the hyperparameters');
  check(numbered.slice(hyperEnd), expected.slice(expParams), numbered[numbered.length - 1].n);
  return { config, meta: name === undefined ? {} : { name } };
}

function parseValue<C>(h: Hyperparameter<C>, raw: string, fail: (msg: string) => never): unknown {
  const k = h.kind;
  switch (k.type) {
    case "count": {
      const v = Number(raw);
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(v) || v < k.min) fail(`${h.symbol} = ${raw}: expected a whole number ≥ ${k.min}`);
      return v;
    }
    case "number": {
      const v = Number(raw);
      if (!NUMBER.test(raw) || !Number.isFinite(v) || (k.positive ? v <= 0 : v < 0)) fail(`${h.symbol} = ${raw}: expected a ${k.positive ? "positive" : "non-negative"} number`);
      return v;
    }
    case "bool":
      if (raw !== "yes" && raw !== "no") fail(`${h.symbol} = ${raw}: expected yes or no`);
      return raw === "yes";
    case "word":
      if (!Object.hasOwn(k.words, raw)) fail(`${h.symbol} = ${raw}: expected one of ${Object.keys(k.words).join(", ")}`);
      return k.words[raw];
  }
}

function describe<C>(h: Hyperparameter<C>): string {
  return h.kind.type === "word" ? `one of ${Object.keys(h.kind.words).join(", ")}` : h.kind.type === "bool" ? "yes or no" : `e.g. ${h.symbol} = ${formatValue(h.kind, h.kind.type === "count" ? Math.max(1, h.kind.min) : 1)}`;
}

/** The checks the architectures make on metadata, made on a card's values. */
function validate(c: ModelConfig, fail: (symbol: string, msg: string) => never): void {
  if (c.nHead % c.nKVHead !== 0) fail("H_kv", `H = ${c.nHead} attention heads are not a multiple of H_kv = ${c.nKVHead} key/value heads`);
  if (c.rope && (c.rope.dims > c.headDim || c.rope.dims % 2 !== 0)) fail("d_rot", `d_rot = ${c.rope.dims} must be even and at most d_h = ${c.headDim}`);
  if (c.ffn.experts > 0 && (c.ffn.expertsUsed < 1 || c.ffn.expertsUsed > c.ffn.experts)) fail("k", `k = ${c.ffn.expertsUsed} must be from 1 to E = ${c.ffn.experts}`);
  if (c.ffn.experts === 0 && c.ffn.expertsUsed !== 0) fail("k", `k = ${c.ffn.expertsUsed} experts per token, but E = 0 (a dense feed-forward)`);
  if (c.finalSoftcap < 0) fail("c_out", `c_out = ${c.finalSoftcap}: a soft-cap is positive (or 0: off)`);
  if (c.embedScale === 0) fail("s_e", "s_e = 0 would zero every embedding");
}

function clip(s: string, n = 120): string {
  return s.length > n ? s.slice(0, n) + "…" : s;
}
