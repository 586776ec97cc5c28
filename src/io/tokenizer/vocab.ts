// The vocabulary as a GGUF file stores it (`tokenizer.ggml.*`), read into the tables both
// tokenizers use, with llama.cpp's defaults and fix-ups: default special ids, which tokens end a
// turn, and which tokens are matched whole in raw text.

import { ModelFileError } from "../../errors.js";
import type { GGUFValue } from "../gguf/reader.js";
import { Metadata } from "../gguf/metadata.js";
import { preTokenizer, type PreTokenizer } from "./pretokenize.js";

/** `tokenizer.ggml.token_type` values (SentencePiece's piece types). */
export const enum TokenType {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
}

export interface SpecialToken {
  id: number;
  text: string;
  /** Matched even when special-token text is not parsed (user-defined tokens are). */
  always: boolean;
  /** Eat white space to the left / right of a match (llama.cpp's LSTRIP / RSTRIP attributes). */
  lstrip: boolean;
  rstrip: boolean;
}

export interface Vocab {
  path: string;
  kind: "spm" | "bpe";
  tokens: string[];
  /** Merge scores (SentencePiece); zero when the file has none. */
  scores: Float32Array;
  types: Uint8Array;
  ids: Map<string, number>;
  /** BPE merges: "left right" -> rank (lower merges first). */
  ranks: Map<string, number>;
  pre: PreTokenizer;
  bos?: number;
  eos?: number;
  eot?: number;
  eom?: number;
  unk?: number;
  pad?: number;
  addBos: boolean;
  addEos: boolean;
  addSpacePrefix: boolean;
  /** Ids that end generation (llama.cpp's EOG set). */
  stopIds: Set<number>;
  /** Control, user-defined and unknown tokens, longest text first: the raw-text matches. */
  specials: SpecialToken[];
}

// Token texts that llama.cpp treats as end-of-turn / end-of-generation wherever they appear.
const EOT_TEXTS = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"];
const EOG_TEXTS = new Set([...EOT_TEXTS, "<|return|>", "<|call|>", "<|eom_id|>", "[EOS]", "<eos>"]);
const FIM_EOG_TEXTS = new Set(["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>"]);

export function loadVocab(map: Map<string, GGUFValue>, path: string): Vocab {
  const m = new Metadata(map, path);
  const model = m.string("tokenizer.ggml.model");
  let kind: "spm" | "bpe";
  if (model === "llama") kind = "spm";
  else if (model === "gpt2") kind = "bpe";
  else throw new ModelFileError(`${path}: tokenizer.ggml.model "${model}" is not supported (toy reads "llama" SentencePiece and "gpt2" byte-level BPE vocabularies)`);

  const tokens = m.strings("tokenizer.ggml.tokens");
  if (!tokens) throw new ModelFileError(`${path}: metadata tokenizer.ggml.tokens is missing (expected the vocabulary)`);
  const n = tokens.length;
  if (n === 0) throw new ModelFileError(`${path}: metadata tokenizer.ggml.tokens is empty`);

  const scoresIn = m.numbers("tokenizer.ggml.scores");
  const typesIn = m.numbers("tokenizer.ggml.token_type");
  if (scoresIn && scoresIn.length < n) throw new ModelFileError(`${path}: metadata tokenizer.ggml.scores has ${scoresIn.length} entries for ${n} tokens`);
  if (typesIn && typesIn.length < n) throw new ModelFileError(`${path}: metadata tokenizer.ggml.token_type has ${typesIn.length} entries for ${n} tokens`);
  const scores = new Float32Array(n);
  const types = new Uint8Array(n).fill(TokenType.Normal);
  const ids = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    if (tokens[i] === "") tokens[i] = `[EMPTY_${i}]`; // as llama.cpp names them
    if (!ids.has(tokens[i])) ids.set(tokens[i], i);
    if (scoresIn) scores[i] = scoresIn[i];
    if (typesIn) types[i] = typesIn[i] >= TokenType.Normal && typesIn[i] <= TokenType.Byte ? typesIn[i] : 0;
  }

  const ranks = new Map<string, number>();
  if (kind === "bpe") {
    const merges = m.strings("tokenizer.ggml.merges");
    if (!merges) throw new ModelFileError(`${path}: metadata tokenizer.ggml.merges is missing (a "gpt2" vocabulary needs its BPE merges)`);
    for (let r = 0; r < merges.length; r++) {
      // "left right", split at the first space after the first character (a piece may be " ")
      const sp = merges[r].indexOf(" ", 1);
      const key = sp < 0 ? " " : merges[r];
      if (!ranks.has(key)) ranks.set(key, r);
    }
  }

  const pre = kind === "bpe" ? preTokenizer(m.string("tokenizer.ggml.pre", "default")) : { ...preTokenizer("default"), cleanSpaces: false, addBos: true };

  // Special ids: SentencePiece defaults to <unk>=0 <s>=1 </s>=2; the file's keys win when in range.
  const id = (key: string, fallback?: number): number | undefined => {
    const v = m.has(key) ? m.number(key) : undefined;
    if (v !== undefined && Number.isInteger(v) && v >= 0 && v < n) return v;
    return fallback !== undefined && fallback < n ? fallback : undefined;
  };
  const spm = kind === "spm";
  const bos = id("tokenizer.ggml.bos_token_id", spm ? 1 : undefined);
  const eos = id("tokenizer.ggml.eos_token_id", spm ? 2 : undefined);
  const unk = id("tokenizer.ggml.unknown_token_id", spm ? 0 : undefined);
  const pad = id("tokenizer.ggml.padding_token_id");
  let eot = id("tokenizer.ggml.eot_token_id");
  let eom = id("tokenizer.ggml.eom_token_id");

  const addBos = m.bool("tokenizer.ggml.add_bos_token", pre.addBos) && bos !== undefined;
  const addEos = m.bool("tokenizer.ggml.add_eos_token", false) && eos !== undefined;
  const addSpacePrefix = m.bool("tokenizer.ggml.add_space_prefix", spm);

  // End-of-generation tokens, found by their text as llama.cpp does; they count as control tokens.
  // (Where several EOT texts exist, llama.cpp's pick depends on hash order; we take the first of
  // EOT_TEXTS, so a ChatML vocabulary's EOT is <|im_end|> rather than <|endoftext|>.)
  eot ??= EOT_TEXTS.map((t) => ids.get(t)).find((i) => i !== undefined);
  eom ??= ids.get("<|eom_id|>");
  const stopIds = new Set<number>();
  for (let i = 0; i < n; i++) {
    const t = tokens[i];
    if (EOG_TEXTS.has(t) || FIM_EOG_TEXTS.has(t)) {
      stopIds.add(i);
      types[i] = TokenType.Control;
    }
  }
  for (const s of [eos, eot, eom]) if (s !== undefined) stopIds.add(s);

  // Phi-3's special tokens swallow the white space after them (llama.cpp sets RSTRIP by model name).
  const name = m.string("general.name", "").toLowerCase();
  const phi3 = name.includes("phi-3") || name.includes("phi3");
  const specials: SpecialToken[] = [];
  for (let i = 0; i < n; i++) {
    const t = types[i];
    if (t !== TokenType.Control && t !== TokenType.UserDefined && t !== TokenType.Unknown) continue;
    const text = tokens[i];
    const rstrip = phi3 && !["<unk>", "<s>", "<|endoftext|>"].includes(text);
    specials.push({ id: i, text, always: t === TokenType.UserDefined, lstrip: false, rstrip });
  }
  specials.sort((a, b) => b.text.length - a.text.length || a.id - b.id);

  return { path, kind, tokens, scores, types, ids, ranks, pre, bos, eos, eot, eom, unk, pad, addBos, addEos, addSpacePrefix, stopIds, specials };
}
