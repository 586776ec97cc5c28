// A tiny random Llama-architecture GGUF, built with toy's own writer, for unit tests that must
// not depend on the shared fixtures. The same params and seed give the same bytes every time.

import { GGUFValueType } from "../../src/io/gguf/reader.js";
import { GGMLType } from "../../src/io/gguf/types.js";
import { encodeGGUF, writeGGUF, type GGUFMetadataEntry, type GGUFTensorData, type GGUFWriteSpec } from "../../src/io/gguf/writer.js";

export interface TinyLlamaParams {
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nKVHead: number;
  nFF: number;
  /** At least 3; 260 gives `<unk>`, `<s>`, `</s>`, the 256 byte tokens and "▁a". */
  nVocab: number;
  ctx: number;
  ropeBase: number;
  rmsEps: number;
  /** Share token_embd.weight as the output matrix (no output.weight tensor). */
  tied: boolean;
  seed: number;
  alignment?: number;
  /** Store each 2-D weight matrix some other way (norms stay F32, as llama.cpp keeps them).
   *  `rows` × `cols` with cols the row length (ggml dims [cols, rows]). */
  encode?: (data: Float32Array, rows: number, cols: number, name: string) => { type: number; bytes: Uint8Array };
}

export const TINY_LLAMA_DEFAULTS: TinyLlamaParams = {
  nEmbd: 32, nLayer: 2, nHead: 4, nKVHead: 2, nFF: 64, nVocab: 260, ctx: 64,
  ropeBase: 10000, rmsEps: 1e-5, tied: false, seed: 42,
};

export interface TinyLlama {
  params: TinyLlamaParams;
  /** The writer input: metadata entries and tensors. */
  spec: GGUFWriteSpec;
  /** The float32 values of every tensor, by name, before any `encode`. */
  weights: Map<string, Float32Array>;
  /** Tensor shapes in ggml order, by name. */
  shapes: Map<string, number[]>;
  tokens: string[];
}

/** mulberry32: a small, fast 32-bit PRNG with a fixed seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal samples by Box–Muller. */
function normal(rand: () => number): number {
  const u = 1 - rand(); // (0, 1]
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** A llama (SentencePiece) vocabulary: `<unk>`, `<s>`, `</s>`, byte tokens, then plain pieces. */
function vocabulary(n: number): { tokens: string[]; scores: Float32Array; types: Int32Array } {
  if (n < 3) throw new Error(`tiny llama: nVocab ${n} is less than the 3 special tokens`);
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3]; // UNKNOWN, CONTROL, CONTROL
  for (let b = 0; b < 256 && tokens.length < n; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6); // BYTE
  }
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const pieces = function* () {
    for (const l of letters) yield `▁${l}`;
    for (const l of letters) yield l;
    for (let i = 0; ; i++) yield `▁${letters[i % 26]}${letters[Math.floor(i / 26) % 26]}${i >= 676 ? i : ""}`;
  };
  for (const p of pieces()) {
    if (tokens.length >= n) break;
    tokens.push(p);
    types.push(1); // NORMAL
  }
  const scores = new Float32Array(n);
  for (let i = 0; i < n; i++) scores[i] = types[i] === 1 ? -(i - 258) : 0;
  return { tokens, scores, types: Int32Array.from(types) };
}

/** Build the tiny model in memory. */
export function tinyLlama(overrides: Partial<TinyLlamaParams> = {}): TinyLlama {
  const p: TinyLlamaParams = { ...TINY_LLAMA_DEFAULTS, ...overrides };
  if (p.nEmbd % p.nHead !== 0) throw new Error(`tiny llama: nEmbd ${p.nEmbd} is not a multiple of nHead ${p.nHead}`);
  if (p.nHead % p.nKVHead !== 0) throw new Error(`tiny llama: nHead ${p.nHead} is not a multiple of nKVHead ${p.nKVHead}`);
  const headDim = p.nEmbd / p.nHead;
  const nKV = p.nKVHead * headDim;
  const rand = mulberry32(p.seed);
  const vocab = vocabulary(p.nVocab);

  const weights = new Map<string, Float32Array>();
  const shapes = new Map<string, number[]>();
  const tensors: GGUFTensorData[] = [];
  const add = (name: string, dims: number[], values: Float32Array) => {
    weights.set(name, values);
    shapes.set(name, dims);
    if (dims.length === 2 && p.encode) {
      const { type, bytes } = p.encode(values, dims[1], dims[0], name);
      tensors.push({ name, dims, type, bytes });
    } else {
      tensors.push({ name, dims, type: GGMLType.F32, bytes: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) });
    }
  };
  const matrix = (name: string, cols: number, rows: number, scale: number) => {
    const v = new Float32Array(cols * rows);
    for (let i = 0; i < v.length; i++) v[i] = scale * normal(rand);
    add(name, [cols, rows], v);
  };
  const norm = (name: string) => {
    const v = new Float32Array(p.nEmbd);
    for (let i = 0; i < v.length; i++) v[i] = 1 + 0.1 * normal(rand);
    add(name, [p.nEmbd], v);
  };

  matrix("token_embd.weight", p.nEmbd, p.nVocab, 0.5);
  for (let l = 0; l < p.nLayer; l++) {
    const b = `blk.${l}`;
    norm(`${b}.attn_norm.weight`);
    matrix(`${b}.attn_q.weight`, p.nEmbd, p.nEmbd, 0.2);
    matrix(`${b}.attn_k.weight`, p.nEmbd, nKV, 0.2);
    matrix(`${b}.attn_v.weight`, p.nEmbd, nKV, 0.2);
    matrix(`${b}.attn_output.weight`, p.nEmbd, p.nEmbd, 0.1);
    norm(`${b}.ffn_norm.weight`);
    matrix(`${b}.ffn_gate.weight`, p.nEmbd, p.nFF, 0.2);
    matrix(`${b}.ffn_up.weight`, p.nEmbd, p.nFF, 0.2);
    matrix(`${b}.ffn_down.weight`, p.nFF, p.nEmbd, 0.1);
  }
  norm("output_norm.weight");
  if (!p.tied) matrix("output.weight", p.nEmbd, p.nVocab, 0.2);

  const U32 = GGUFValueType.UINT32;
  const metadata: GGUFMetadataEntry[] = [
    ["general.architecture", "llama"],
    ["general.name", "tiny-llama"],
    ...(p.encode ? [] : [["general.file_type", 0, U32] as GGUFMetadataEntry]),
    ["llama.vocab_size", p.nVocab, U32],
    ["llama.context_length", p.ctx, U32],
    ["llama.embedding_length", p.nEmbd, U32],
    ["llama.block_count", p.nLayer, U32],
    ["llama.feed_forward_length", p.nFF, U32],
    ["llama.rope.dimension_count", headDim, U32],
    ["llama.attention.head_count", p.nHead, U32],
    ["llama.attention.head_count_kv", p.nKVHead, U32],
    ["llama.attention.layer_norm_rms_epsilon", p.rmsEps, GGUFValueType.FLOAT32],
    ["llama.rope.freq_base", p.ropeBase, GGUFValueType.FLOAT32],
    ["tokenizer.ggml.model", "llama"],
    ["tokenizer.ggml.tokens", vocab.tokens, GGUFValueType.ARRAY, GGUFValueType.STRING],
    ["tokenizer.ggml.scores", vocab.scores, GGUFValueType.ARRAY, GGUFValueType.FLOAT32],
    ["tokenizer.ggml.token_type", vocab.types, GGUFValueType.ARRAY, GGUFValueType.INT32],
    ["tokenizer.ggml.bos_token_id", 1, U32],
    ["tokenizer.ggml.eos_token_id", 2, U32],
    ["tokenizer.ggml.unknown_token_id", 0, U32],
    ["tokenizer.ggml.add_bos_token", true],
    ["tokenizer.ggml.add_eos_token", false],
  ];
  return { params: p, spec: { metadata, tensors, alignment: p.alignment }, weights, shapes, tokens: vocab.tokens };
}

/** The tiny model as GGUF bytes. */
export function tinyLlamaBytes(overrides: Partial<TinyLlamaParams> = {}): Uint8Array {
  return encodeGGUF(tinyLlama(overrides).spec);
}

/** Write the tiny model to `path` (atomically); returns what was written. */
export function writeTinyLlama(path: string, overrides: Partial<TinyLlamaParams> = {}): TinyLlama {
  const model = tinyLlama(overrides);
  writeGGUF(path, model.spec);
  return model;
}
