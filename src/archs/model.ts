// What every language-model architecture provides to the engines.

import type { Device } from "../backends/kernels.js";
import type { KVCache } from "../blocks/kvCache.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import type { Tensor } from "../tensor/tensor.js";

export interface LanguageModel {
  readonly arch: string;
  readonly file: GGUFFile;
  readonly device: Device;
  readonly nVocab: number;
  readonly contextLength: number;
  /** The hyperparameters read from the metadata (what `toy describe --json` prints). */
  readonly config: Record<string, unknown>;
  /** A fresh KV cache for up to `capacity` positions (default: the model's context length). */
  newCache(capacity?: number): KVCache;
  /**
   * Run tokens `ids` at positions cache.length.. and append them to the cache.
   * Returns logits [T, vocab] ("all") or [1, vocab] for the last token ("last").
   */
  forward(ids: Int32Array, cache: KVCache, logits: "all" | "last"): Tensor;
}
