// Llama (2, 3.x; also SmolLM2, TinyLlama, Mistral): pre-norm decoder blocks with RMSNorm,
// rotary positions on interleaved pairs, grouped-query attention and a SwiGLU feed-forward.
//
//   x = E[ids]                                             [T, d]
//   for each layer:  x = x + Attn(rmsNorm(x)),  x = x + SwiGLU(rmsNorm(x))
//   logits = rmsNorm(x) Wₒᵤₜᵀ                              [T, vocab]

import type { Device } from "../backends/kernels.js";
import { KVCache } from "../blocks/kvCache.js";
import { feedForward, type FeedForwardWeights } from "../blocks/feedForward.js";
import { selfAttention, type AttentionConfig, type AttentionWeights } from "../blocks/selfAttention.js";
import { ModelFileError } from "../errors.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { Metadata } from "../io/gguf/metadata.js";
import { add, embedding, matmul, rmsNorm, ropeInvFreq, type RopeConfig } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";
import type { LanguageModel } from "./model.js";
import { ModelWeights } from "./weights.js";

export interface LlamaConfig {
  arch: "llama";
  nVocab: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nKVHead: number;
  headDim: number;
  nFF: number;
  contextLength: number;
  normEps: number;
  rope: Omit<RopeConfig, "freqFactors"> & { hasFreqFactors: boolean };
  slidingWindow: number;
  tiedOutput: boolean;
}

interface LlamaLayer {
  attnNorm: Float32Array;
  attn: AttentionWeights;
  ffnNorm: Float32Array;
  ffn: FeedForwardWeights;
}

export function llamaConfig(file: GGUFFile): LlamaConfig {
  const m = new Metadata(file.metadata, file.path);
  const a = "llama";
  const nEmbd = m.count(`${a}.embedding_length`);
  const nHead = m.count(`${a}.attention.head_count`);
  if (nHead === 0) throw new ModelFileError(`${file.path}: metadata ${a}.attention.head_count is 0`);
  const nKVHead = m.count(`${a}.attention.head_count_kv`, nHead);
  if (nKVHead === 0 || nHead % nKVHead !== 0) throw new ModelFileError(`${file.path}: ${nHead} heads are not a multiple of ${nKVHead} KV heads`);
  const headDim = m.count(`${a}.attention.key_length`, nEmbd / nHead);
  if (!Number.isInteger(headDim)) throw new ModelFileError(`${file.path}: embedding_length ${nEmbd} is not a multiple of head_count ${nHead}`);
  const embd = file.tensor("token_embd.weight");
  if (!embd) throw new ModelFileError(`${file.path}: tensor token_embd.weight is missing`);
  const scalingType = m.string(`${a}.rope.scaling.type`, "none");
  if (!["none", "linear", "llama3"].includes(scalingType)) {
    throw new ModelFileError(`${file.path}: RoPE scaling type "${scalingType}" is not supported (supported: none, linear, llama3 via rope_freqs.weight)`);
  }
  const factor = scalingType === "linear" ? m.number(`${a}.rope.scaling.factor`, m.number(`${a}.rope.scale_linear`, 1)) : m.number(`${a}.rope.scale_linear`, 1);
  return {
    arch: "llama",
    nVocab: embd.dims[1],
    nEmbd, nHead, nKVHead, headDim,
    nLayer: m.count(`${a}.block_count`),
    nFF: m.count(`${a}.feed_forward_length`),
    contextLength: m.count(`${a}.context_length`, 2048),
    normEps: m.number(`${a}.attention.layer_norm_rms_epsilon`, 1e-5),
    rope: {
      base: m.number(`${a}.rope.freq_base`, 10000),
      dims: m.count(`${a}.rope.dimension_count`, headDim),
      style: "interleaved",
      freqScale: factor > 0 ? 1 / factor : 1,
      hasFreqFactors: file.tensor("rope_freqs.weight") !== undefined,
    },
    slidingWindow: m.count(`${a}.attention.sliding_window`, 0),
    tiedOutput: file.tensor("output.weight") === undefined,
  };
}

export function loadLlama(file: GGUFFile, device: Device): LanguageModel {
  const c = llamaConfig(file);
  const w = new ModelWeights(file);
  const kvWidth = c.nKVHead * c.headDim;
  const tokenEmbd = w.need("token_embd.weight", [c.nEmbd, c.nVocab]);
  const output: Weight = w.optional("output.weight", [c.nEmbd, c.nVocab]) ?? tokenEmbd;
  const outputNorm = w.vector("output_norm.weight", c.nEmbd);
  const freqFactors = c.rope.hasFreqFactors ? w.vector("rope_freqs.weight", c.rope.dims / 2) : null;
  const rope: RopeConfig = { ...c.rope, freqFactors };
  const attnConfig: AttentionConfig = {
    heads: c.nHead, kvHeads: c.nKVHead, headDim: c.headDim, rope, invFreq: ropeInvFreq(rope),
    qkNorm: null, normEps: c.normEps,
    attn: { scale: 1 / Math.sqrt(c.headDim), softcap: 0, window: c.slidingWindow, causal: true },
  };
  const layers: LlamaLayer[] = Array.from({ length: c.nLayer }, (_, l) => {
    const b = `blk.${l}`;
    return {
      attnNorm: w.vector(`${b}.attn_norm.weight`, c.nEmbd),
      attn: {
        q: w.need(`${b}.attn_q.weight`, [c.nEmbd, c.nHead * c.headDim]),
        k: w.need(`${b}.attn_k.weight`, [c.nEmbd, kvWidth]),
        v: w.need(`${b}.attn_v.weight`, [c.nEmbd, kvWidth]),
        o: w.need(`${b}.attn_output.weight`, [c.nHead * c.headDim, c.nEmbd]),
      },
      ffnNorm: w.vector(`${b}.ffn_norm.weight`, c.nEmbd),
      ffn: {
        gate: w.need(`${b}.ffn_gate.weight`, [c.nEmbd, c.nFF]),
        up: w.need(`${b}.ffn_up.weight`, [c.nEmbd, c.nFF]),
        down: w.need(`${b}.ffn_down.weight`, [c.nFF, c.nEmbd]),
      },
    };
  });

  function forward(ids: Int32Array, cache: KVCache, logits: "all" | "last"): Tensor {
    const T = ids.length, pos0 = cache.length;
    cache.reserve(T);
    const positions = Int32Array.from({ length: T }, (_, t) => pos0 + t);
    let x = embedding(tokenEmbd, ids, device);                                   // [T, d]
    layers.forEach((layer, l) => {
      const h = rmsNorm(x, layer.attnNorm, c.normEps);                           // [T, d]
      x = add(x, selfAttention(h, layer.attn, attnConfig, cache.layers[l], pos0, positions));
      const g = rmsNorm(x, layer.ffnNorm, c.normEps);                            // [T, d]
      x = add(x, feedForward(g, layer.ffn, "swiglu"));                           // [T, d]
    });
    cache.length += T;
    if (logits === "last") x = x.sliceRows(T - 1, T);                            // [1, d]
    return matmul(rmsNorm(x, outputNorm, c.normEps), output);                    // [T|1, vocab]
  }

  return {
    arch: "llama", file, device, nVocab: c.nVocab, contextLength: c.contextLength,
    config: c as unknown as Record<string, unknown>,
    newCache: (capacity = c.contextLength) => new KVCache(c.nLayer, capacity, kvWidth),
    forward,
  };
}
