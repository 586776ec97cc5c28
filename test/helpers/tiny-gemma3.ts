// A tiny random-weight Gemma 3 GGUF, built with toy's own writer from the tiny Llama: the same
// vocabulary and matrices, metadata under gemma3.*, plus what Gemma 3 adds (per-head q/k norms,
// post-attention and post-FFN norms, a sliding window on 5 of every 6 layers, a tied output).
// Deterministic: the same params give the same bytes.

import { GGUFValueType } from "../../src/io/gguf/reader.js";
import { GGMLType } from "../../src/io/gguf/types.js";
import { writeGGUF, type GGUFMetadataEntry } from "../../src/io/gguf/writer.js";
import { mulberry32, tinyLlama, type TinyLlama, type TinyLlamaParams } from "./tiny-model.js";

export interface TinyGemma3Params extends TinyLlamaParams {
  /** gemma3.attention.sliding_window (0: no key, every layer global). */
  window: number;
  /** gemma3.attention.sliding_window_pattern: a period, per-layer flags, or absent (llama.cpp's default 6). */
  pattern?: number | boolean[];
  /** gemma3.rope.scaling.factor with type "linear" (absent when 1). */
  ropeScaling: number;
}

export const TINY_GEMMA3_DEFAULTS: TinyGemma3Params = {
  // 7 layers: 0..4 slide, 5 is global, 6 slides again; a window of 4 tokens, a context of 32.
  nEmbd: 32, nLayer: 7, nHead: 4, nKVHead: 1, nFF: 64, nVocab: 300, ctx: 32,
  ropeBase: 1e6, rmsEps: 1e-6, tied: true, seed: 7, window: 4, ropeScaling: 1,
};

export function tinyGemma3(overrides: Partial<TinyGemma3Params> = {}): TinyLlama {
  const p: TinyGemma3Params = { ...TINY_GEMMA3_DEFAULTS, ...overrides };
  const base = tinyLlama(p);
  const headDim = p.nEmbd / p.nHead;
  const rand = mulberry32(p.seed + 1);
  const { tensors } = base.spec;
  const addNorm = (name: string, width: number) => {
    const v = new Float32Array(width);
    for (let i = 0; i < width; i++) v[i] = 1 + 0.2 * (rand() - 0.5);
    base.weights.set(name, v);
    base.shapes.set(name, [width]);
    tensors.push({ name, dims: [width], type: GGMLType.F32, bytes: new Uint8Array(v.buffer) });
  };
  for (let l = 0; l < p.nLayer; l++) {
    addNorm(`blk.${l}.attn_q_norm.weight`, headDim);
    addNorm(`blk.${l}.attn_k_norm.weight`, headDim);
    addNorm(`blk.${l}.post_attention_norm.weight`, p.nEmbd);
    addNorm(`blk.${l}.post_ffw_norm.weight`, p.nEmbd);
  }
  const U32 = GGUFValueType.UINT32;
  const metadata: GGUFMetadataEntry[] = (base.spec.metadata as GGUFMetadataEntry[]).map(([key, ...rest]) => {
    if (key === "general.architecture") return [key, "gemma3"];
    if (key === "general.name") return [key, "tiny-gemma3"];
    return [key.replace(/^llama\./, "gemma3."), ...rest] as GGUFMetadataEntry;
  });
  metadata.push(["gemma3.attention.key_length", headDim, U32], ["gemma3.attention.value_length", headDim, U32]);
  if (p.window > 0) metadata.push(["gemma3.attention.sliding_window", p.window, U32]);
  if (typeof p.pattern === "number") metadata.push(["gemma3.attention.sliding_window_pattern", p.pattern, U32]);
  if (Array.isArray(p.pattern)) metadata.push(["gemma3.attention.sliding_window_pattern", p.pattern, GGUFValueType.ARRAY, GGUFValueType.BOOL]);
  if (p.ropeScaling !== 1) {
    metadata.push(["gemma3.rope.scaling.type", "linear"], ["gemma3.rope.scaling.factor", p.ropeScaling, GGUFValueType.FLOAT32]);
  }
  return { ...base, params: p, spec: { ...base.spec, metadata, tensors } };
}

export function writeTinyGemma3(path: string, overrides: Partial<TinyGemma3Params> = {}): TinyLlama {
  const model = tinyGemma3(overrides);
  writeGGUF(path, model.spec);
  return model;
}
