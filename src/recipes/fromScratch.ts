// fromScratch: a llama-architecture model with seeded random weights, from a named config or a
// given ModelConfig, over a byte-level SentencePiece-style vocabulary (`<unk>`, `<s>`, `</s>`,
// the 256 `<0xXX>` byte tokens and "▁", the space), so any text encodes and every checkpoint
// decodes as text in `toy infer`.
//   weights ~ N(0, 0.02²); norms = 1; with residual scaling (GPT-2) the matrices that write into
//   the residual stream (attn_output, ffn_down) get std 0.02 / √(2·layers).
// realize(config, options) then step(batch), exactly as warmStart: the initial model is built as
// an in-memory GGUF and trained through the same path.

import type { ModelConfig } from "../archs/config.js";
import { configOf } from "../archs/index.js";
import { DEFAULT_TRAIN_OPTIONS, Trainer, trainKernels, type RunOptions, type TrainOptions } from "../train/trainer.js";
import { Rng } from "../data/rng.js";
import { blockNames, TENSORS } from "../blocks/tensorNames.js";
import { parametersFromFile, writeCheckpoint } from "../train/params.js";
import { UsageError } from "../errors.js";
import { GGUFValueType, parseGGUF } from "../io/gguf/reader.js";
import { GGMLType } from "../io/gguf/types.js";
import { encodeGGUF, type GGUFMetadataEntry, type GGUFTensorData } from "../io/gguf/writer.js";
import type { RealizedRun } from "./warmStart.js";

/** The shape of a from-scratch llama model (the rest of the ModelConfig follows from it). */
export interface ScratchShape {
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nKVHead: number;
  nFF: number;
  contextLength: number;
}

/** Named configs. `tiny` trains to readable byte-level text in ~2–3 minutes on the ts backend (well under one on cpu). */
export const SCRATCH_CONFIGS: Record<string, ScratchShape> = {
  nano: { nEmbd: 32, nLayer: 2, nHead: 2, nKVHead: 2, nFF: 96, contextLength: 64 },
  tiny: { nEmbd: 64, nLayer: 2, nHead: 4, nKVHead: 4, nFF: 192, contextLength: 128 },
  small: { nEmbd: 128, nLayer: 4, nHead: 4, nKVHead: 4, nFF: 384, contextLength: 128 },
};
export const DEFAULT_SCRATCH_CONFIG = "tiny";

export interface ScratchOptions extends RunOptions {
  /** Seed of the initial weights (default: the training seed). */
  initSeed?: number;
  /** Scale the residual-writing matrices by 1/√(2·layers) (default true). */
  residualScaling?: boolean;
  /** Standard deviation of the initial matrices (default 0.02). */
  initStd?: number;
}

/** The byte-level vocabulary: `<unk>`, `<s>`, `</s>`, `<0x00>`…`<0xFF>`, "▁". */
export function byteVocabulary(): { tokens: string[]; scores: Float32Array; types: Int32Array } {
  const tokens = ["<unk>", "<s>", "</s>"], types = [2, 3, 3]; // UNKNOWN, CONTROL, CONTROL
  for (let b = 0; b < 256; b++) { tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`); types.push(6); } // BYTE
  tokens.push("▁"); types.push(1); // NORMAL: the space is one token, not three bytes
  return { tokens, scores: new Float32Array(tokens.length), types: Int32Array.from(types) };
}

/** The full llama ModelConfig of a shape over the byte vocabulary. */
export function scratchConfig(shape: ScratchShape): ModelConfig {
  const headDim = shape.nEmbd / shape.nHead;
  return {
    arch: "llama", nVocab: byteVocabulary().tokens.length, nEmbd: shape.nEmbd, nLayer: shape.nLayer,
    nHead: shape.nHead, nKVHead: shape.nKVHead, headDim, nFF: shape.nFF, contextLength: shape.contextLength,
    norm: { kind: "rms", eps: 1e-5 },
    rope: { base: 10000, dims: headDim, style: "interleaved", freqScale: 1, freqFactors: false, sliding: null },
    attention: { qkvBias: false, fusedQKV: false, outBias: false, qkNorm: null, scale: 1 / Math.sqrt(headDim), softcap: 0, window: 0, windowPattern: 0 },
    ffn: { kind: "swiglu", bias: false, experts: 0, expertsUsed: 0 },
    embedScale: 1, postNorms: false, finalSoftcap: 0, tiedOutput: false,
  };
}

function checkShape(c: ModelConfig): void {
  const ok = c.arch === "llama" && c.norm.kind === "rms" && c.ffn.kind === "swiglu" && c.ffn.experts === 0 && !c.attention.qkvBias
    && !c.attention.fusedQKV && !c.attention.qkNorm && c.rope !== null && !c.postNorms && c.embedScale === 1 && c.finalSoftcap === 0;
  if (!ok) throw new UsageError("fromScratch: only llama-architecture configs (RMSNorm, SwiGLU, RoPE) can be built from scratch");
  if (c.nEmbd % c.nHead !== 0 || c.nHead % c.nKVHead !== 0 || c.headDim !== c.nEmbd / c.nHead) {
    throw new UsageError(`fromScratch: d ${c.nEmbd}, ${c.nHead} heads and ${c.nKVHead} KV heads do not fit together`);
  }
}

/** Resolve a config name (or pass a ModelConfig through). */
export function resolveScratchConfig(configOrName: string | ModelConfig): ModelConfig {
  if (typeof configOrName !== "string") return configOrName;
  const shape = SCRATCH_CONFIGS[configOrName];
  if (!shape) throw new UsageError(`unknown config "${configOrName}" (known: ${Object.keys(SCRATCH_CONFIGS).join(", ")})`);
  return scratchConfig(shape);
}

/** The seeded initial model as GGUF bytes (llama metadata, byte vocabulary, F32 tensors). */
export function initialModelBytes(c: ModelConfig, seed: number, residualScaling = true, std = 0.02, name = "toy-from-scratch"): Uint8Array {
  checkShape(c);
  const vocab = byteVocabulary();
  if (c.nVocab !== vocab.tokens.length) throw new UsageError(`fromScratch: the byte vocabulary has ${vocab.tokens.length} tokens, the config says ${c.nVocab}`);
  const rng = new Rng(seed);
  const tensors: GGUFTensorData[] = [];
  const add = (name: string, dims: number[], v: Float32Array) =>
    tensors.push({ name, dims, type: GGMLType.F32, bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) });
  const matrix = (name: string, cols: number, rows: number, s: number) => {
    const v = new Float32Array(cols * rows);
    for (let i = 0; i < v.length; i++) v[i] = s * rng.normal();
    add(name, [cols, rows], v);
  };
  const ones = (name: string) => add(name, [c.nEmbd], new Float32Array(c.nEmbd).fill(1));
  const residual = residualScaling ? std / Math.sqrt(2 * c.nLayer) : std;
  const kv = c.nKVHead * c.headDim;

  matrix(TENSORS.tokenEmbd, c.nEmbd, c.nVocab, std);
  for (let l = 0; l < c.nLayer; l++) {
    const n = blockNames(l);
    ones(n.attnNorm.weight);
    matrix(n.attnQ.weight, c.nEmbd, c.nHead * c.headDim, std);
    matrix(n.attnK.weight, c.nEmbd, kv, std);
    matrix(n.attnV.weight, c.nEmbd, kv, std);
    matrix(n.attnOutput.weight, c.nHead * c.headDim, c.nEmbd, residual);
    ones(n.ffnNorm.weight);
    matrix(n.ffnGate.weight, c.nEmbd, c.nFF, std);
    matrix(n.ffnUp.weight, c.nEmbd, c.nFF, std);
    matrix(n.ffnDown.weight, c.nFF, c.nEmbd, residual);
  }
  ones(TENSORS.outputNorm.weight);
  if (!c.tiedOutput) matrix(TENSORS.output.weight, c.nEmbd, c.nVocab, std);

  const U32 = GGUFValueType.UINT32, F32 = GGUFValueType.FLOAT32;
  const metadata: GGUFMetadataEntry[] = [
    ["general.architecture", "llama"],
    ["general.name", name],
    ["general.file_type", 0, U32],
    ["llama.vocab_size", c.nVocab, U32],
    ["llama.context_length", c.contextLength, U32],
    ["llama.embedding_length", c.nEmbd, U32],
    ["llama.block_count", c.nLayer, U32],
    ["llama.feed_forward_length", c.nFF, U32],
    ["llama.rope.dimension_count", c.rope!.dims, U32],
    ["llama.attention.head_count", c.nHead, U32],
    ["llama.attention.head_count_kv", c.nKVHead, U32],
    ["llama.attention.layer_norm_rms_epsilon", c.norm.eps, F32],
    ["llama.rope.freq_base", c.rope!.base, F32],
    ["tokenizer.ggml.model", "llama"],
    ["tokenizer.ggml.tokens", vocab.tokens, GGUFValueType.ARRAY, GGUFValueType.STRING],
    ["tokenizer.ggml.scores", vocab.scores, GGUFValueType.ARRAY, F32],
    ["tokenizer.ggml.token_type", vocab.types, GGUFValueType.ARRAY, GGUFValueType.INT32],
    ["tokenizer.ggml.bos_token_id", 1, U32],
    ["tokenizer.ggml.eos_token_id", 2, U32],
    ["tokenizer.ggml.unknown_token_id", 0, U32],
    ["tokenizer.ggml.add_bos_token", true],
    ["tokenizer.ggml.add_eos_token", false],
  ];
  return encodeGGUF({ metadata, tensors });
}

export const fromScratch = {
  name: "from-scratch",
  realize(configOrName: string | ModelConfig = DEFAULT_SCRATCH_CONFIG, options: ScratchOptions = {}): RealizedRun {
    const { initSeed, residualScaling, initStd, backend, ...train } = options;
    const trainOptions: TrainOptions = { ...DEFAULT_TRAIN_OPTIONS, ...train };
    const requested = resolveScratchConfig(configOrName);
    const name = typeof configOrName === "string" ? `toy-${configOrName}` : "toy-from-scratch";
    const source = parseGGUF(initialModelBytes(requested, initSeed ?? trainOptions.seed, residualScaling ?? true, initStd ?? 0.02, name), `<${name}>`);
    const config = configOf(source);
    const params = parametersFromFile(source);
    const trainer = new Trainer(config, params, trainOptions, { kernels: trainKernels(backend) });
    return {
      source, config, params, trainer,
      step: (batch) => trainer.step(batch),
      save: (path) => writeCheckpoint(path, source, params),
    };
  },
};
