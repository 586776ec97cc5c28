// What every language-model architecture provides, and how one is built from a config.

import type { Device } from "../backends/kernels.js";
import { KVCache } from "../blocks/kvCache.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import type { Tensor } from "../tensor/tensor.js";
import type { ModelConfig } from "./config.js";
import { loadDecoder, type DecoderWeights } from "./layers.js";
import { ModelWeights } from "./weights.js";

export interface LanguageModel {
  readonly arch: string;
  readonly file: GGUFFile;
  readonly device: Device;
  readonly nVocab: number;
  readonly contextLength: number;
  /** The configuration the model was built from (what `toy describe --json` prints). */
  readonly config: ModelConfig;
  /** A fresh KV cache for up to `capacity` positions (default: the model's context length). */
  newCache(capacity?: number): KVCache;
  /**
   * Run tokens `ids` at positions cache.length.. and append them to the cache.
   * Returns logits [T, vocab] ("all") or [1, vocab] for the last token ("last").
   */
  forward(ids: Int32Array, cache: KVCache, logits: "all" | "last"): Tensor;
}

/** Inputs of one forward pass. */
export interface ForwardInput {
  ids: Int32Array;
  cache: KVCache;
  pos0: number;
  positions: Int32Array;
  /** Only the last position's logits are needed. */
  lastOnly: boolean;
  device: Device;
}

export interface Architecture {
  name: string;
  /** Read the configuration from GGUF metadata. */
  config(file: GGUFFile): ModelConfig;
  /** Token ids to logits: [T] → [T | 1, vocab]. */
  forward(w: DecoderWeights, c: ModelConfig, input: ForwardInput): Tensor;
}

export function buildModel(arch: Architecture, file: GGUFFile, config: ModelConfig, device: Device): LanguageModel {
  const weights = loadDecoder(new ModelWeights(file), config);
  const kvWidth = config.nKVHead * config.headDim;
  return {
    arch: arch.name, file, device, config,
    nVocab: config.nVocab, contextLength: config.contextLength,
    newCache: (capacity = config.contextLength) => new KVCache(config.nLayer, capacity, kvWidth),
    forward(ids, cache, logits) {
      const T = ids.length, pos0 = cache.length;
      cache.reserve(T);
      const positions = Int32Array.from({ length: T }, (_, t) => pos0 + t);
      const out = arch.forward(weights, config, { ids, cache, pos0, positions, lastOnly: logits === "last", device });
      cache.length += T;
      return out;
    },
  };
}
