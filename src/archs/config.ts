// The configuration every decoder architecture is built from: a plain object, read from GGUF
// metadata (or parsed back from an algorithm card), that fixes the computation completely.

import type { RopeStyle } from "../backends/kernels.js";
import { TENSORS } from "../blocks/tensorNames.js";
import { ModelFileError } from "../errors.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { Metadata } from "../io/gguf/metadata.js";

export interface ModelConfig {
  arch: string;
  nVocab: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nKVHead: number;
  headDim: number;
  nFF: number;
  contextLength: number;
  norm: { kind: "rms" | "layer"; eps: number };
  /** Rotary positions (null: learned position embeddings, GPT-2). `sliding`: the base and
   *  linear scale of sliding-window layers where they differ from the others (Gemma 3: base
   *  10000, unscaled, while global layers use the file's base and scaling); null: the same. */
  rope: {
    base: number; dims: number; style: RopeStyle; freqScale: number; freqFactors: boolean;
    sliding: { base: number; freqScale: number } | null;
  } | null;
  attention: {
    /** q, k, v projections carry biases (Qwen 2, GPT-2). */
    qkvBias: boolean;
    /** One fused [3d, d] projection (GPT-2). */
    fusedQKV: boolean;
    outBias: boolean;
    /** RMSNorm of q and k: per head (Qwen 3) or over the whole projection (OLMoE). */
    qkNorm: "head" | "full" | null;
    scale: number;
    softcap: number;
    /** Sliding-window size (0 = none) and which layers use it, as llama.cpp's
     *  sliding_window_pattern: in each run of `windowPattern` layers, all but the last
     *  (Gemma 2: 2, the even layers; Gemma 3: 6, five local then one global); 0 = every layer.
     *  `isSlidingLayer` is the rule. */
    window: number;
    windowPattern: number;
  };
  ffn: {
    kind: "swiglu" | "geglu" | "mlp";
    bias: boolean;
    /** Mixture of experts: number of experts and how many each token uses (0 = dense). */
    experts: number;
    expertsUsed: number;
  };
  /** Multiplies the token embeddings (Gemma: √d). */
  embedScale: number;
  /** RMSNorm after attention and after the FFN too (Gemma 2, 3). */
  postNorms: boolean;
  /** logits ← cap · tanh(logits / cap) (Gemma 2; 0 = off). */
  finalSoftcap: number;
  tiedOutput: boolean;
}

/** Whether layer l attends within the sliding window (llama.cpp's `is_swa`). */
export function isSlidingLayer(c: ModelConfig, l: number): boolean {
  const { window, windowPattern: p } = c.attention;
  return window > 0 && (p === 0 || l % p < p - 1);
}

/** The RoPE base and linear scale of layer l (sliding-window layers may have their own). */
export function layerRope(c: ModelConfig, l: number): { base: number; freqScale: number } | null {
  if (!c.rope) return null;
  return c.rope.sliding && isSlidingLayer(c, l) ? c.rope.sliding : { base: c.rope.base, freqScale: c.rope.freqScale };
}

/** The hyperparameters every architecture stores under `<arch>.*`. */
export function baseConfig(file: GGUFFile, arch: string): Omit<ModelConfig, "norm" | "rope" | "attention" | "ffn" | "embedScale" | "postNorms" | "finalSoftcap"> & { m: Metadata } {
  const m = new Metadata(file.metadata, file.path);
  const nEmbd = m.count(`${arch}.embedding_length`);
  const nHead = m.count(`${arch}.attention.head_count`);
  if (nHead === 0) throw new ModelFileError(`${file.path}: metadata ${arch}.attention.head_count is 0`);
  const nKVHead = m.count(`${arch}.attention.head_count_kv`, nHead);
  if (nKVHead === 0 || nHead % nKVHead !== 0) throw new ModelFileError(`${file.path}: ${nHead} attention heads are not a multiple of ${nKVHead} KV heads`);
  const headDim = m.count(`${arch}.attention.key_length`, Math.floor(nEmbd / nHead));
  if (headDim === 0 || (!m.has(`${arch}.attention.key_length`) && nEmbd % nHead !== 0)) {
    throw new ModelFileError(`${file.path}: embedding_length ${nEmbd} is not a multiple of head_count ${nHead}`);
  }
  const embd = file.tensor(TENSORS.tokenEmbd);
  if (!embd) throw new ModelFileError(`${file.path}: tensor ${TENSORS.tokenEmbd} is missing`);
  if (embd.dims.length !== 2 || embd.dims[0] !== nEmbd) {
    throw new ModelFileError(`${file.path}: tensor ${TENSORS.tokenEmbd} has shape [${embd.dims.join(", ")}], expected [${nEmbd}, n_vocab]`);
  }
  return {
    m, arch, nEmbd, nHead, nKVHead, headDim,
    nVocab: embd.dims[1],
    nLayer: m.count(`${arch}.block_count`, undefined, 4096),
    nFF: m.count(`${arch}.feed_forward_length`),
    contextLength: m.count(`${arch}.context_length`, 2048),
    tiedOutput: file.tensor("output.weight") === undefined,
  };
}

/** RoPE settings from `<arch>.rope.*` (linear scaling, Llama 3 frequency factors). */
export function ropeConfig(file: GGUFFile, m: Metadata, arch: string, headDim: number, style: RopeStyle): NonNullable<ModelConfig["rope"]> {
  const scaling = m.string(`${arch}.rope.scaling.type`, "none");
  if (!["none", "linear", "llama3"].includes(scaling)) {
    throw new ModelFileError(`${file.path}: RoPE scaling type "${scaling}" is not supported (supported: none, linear, and Llama 3 factors in rope_freqs.weight)`);
  }
  const factor = scaling === "linear" ? m.number(`${arch}.rope.scaling.factor`, m.number(`${arch}.rope.scale_linear`, 1)) : m.number(`${arch}.rope.scale_linear`, 1);
  const dims = m.count(`${arch}.rope.dimension_count`, headDim);
  if (dims > headDim || dims % 2 !== 0) throw new ModelFileError(`${file.path}: ${arch}.rope.dimension_count ${dims} must be even and at most the head size ${headDim}`);
  return {
    base: m.number(`${arch}.rope.freq_base`, 10000),
    dims, style,
    freqScale: factor > 0 ? 1 / factor : 1,
    freqFactors: file.tensor("rope_freqs.weight") !== undefined,
    sliding: null,
  };
}

/** llama.cpp's `<arch>.attention.sliding_window_pattern` as a `windowPattern`: a period (a
 *  whole number), or one flag per layer (an array of bools), which must follow a period. */
export function windowPatternOf(m: Metadata, arch: string, nLayer: number, fallback: number): number {
  const key = `${arch}.attention.sliding_window_pattern`;
  const v = m.get(key);
  if (v === undefined || typeof v === "number" || typeof v === "bigint") return m.count(key, fallback);
  const flags = Array.isArray(v) ? v : ArrayBuffer.isView(v) ? Array.from(v as ArrayLike<number>) : null;
  if (!flags || flags.length !== nLayer || flags.some((f) => typeof f !== "boolean" && typeof f !== "number")) {
    throw new ModelFileError(`${m.path}: metadata ${key} is not a whole number or ${nLayer} per-layer flags`);
  }
  for (let p = 0; p <= nLayer + 1; p++) {
    if (flags.every((f, l) => Boolean(f) === (p === 0 || l % p < p - 1))) return p;
  }
  throw new ModelFileError(`${m.path}: metadata ${key} [${flags.map(Number).join(",")}] is not "all but every p-th layer slides" for any period p (toy supports only periodic patterns)`);
}
