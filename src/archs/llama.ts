// Llama (2, 3.x; also SmolLM2, TinyLlama, Mistral): pre-norm decoder blocks with RMSNorm,
// rotary positions on interleaved pairs, grouped-query attention and a SwiGLU feed-forward.
// Qwen 2/3 and OLMoE run this same forward; their configs switch on biases, NEOX RoPE,
// q/k norms or experts inside the blocks.

import { norm } from "../blocks/norm.js";
import { transformerBlock } from "../blocks/transformerBlock.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { embedding, gatherRows, matmul } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import { baseConfig, ropeConfig, type ModelConfig } from "./config.js";
import type { DecoderWeights } from "./layers.js";
import type { Architecture, ForwardInput } from "./model.js";

/**
 *   x = E[ids]                                                   [T, d]
 *   for each layer:  x = x + Attn(norm(x)),  x = x + FFN(norm(x))
 *   logits = norm(x) Wₒᵤₜᵀ                                        [T, vocab]
 */
export function decoderForward(w: DecoderWeights, _c: ModelConfig, { ids, segments, positions, lastRows, device }: ForwardInput): Tensor {
  let x = embedding(w.tokenEmbd, ids, device);                                     // [T, d]
  w.blocks.forEach((block, l) => {
    x = transformerBlock(x, block, w.blockConfigs[l], segments, l, positions);           // [T, d]
  });
  if (lastRows) x = gatherRows(x, lastRows);                                     // [S, d]
  return matmul(norm(x, w.outputNorm), w.output);                                  // [T|S, vocab]
}

/** The Llama hyperparameters under `<arch>.*`; other families start from these. */
export function llamaLikeConfig(file: GGUFFile, arch: string, ropeStyle: "interleaved" | "neox"): ModelConfig {
  const { m, ...base } = baseConfig(file, arch);
  return {
    ...base,
    norm: { kind: "rms", eps: m.number(`${arch}.attention.layer_norm_rms_epsilon`, 1e-5) },
    rope: ropeConfig(file, m, arch, base.headDim, ropeStyle),
    attention: {
      qkvBias: false, fusedQKV: false, outBias: false, qkNorm: null,
      scale: 1 / Math.sqrt(base.headDim), softcap: 0,
      window: m.count(`${arch}.attention.sliding_window`, 0), windowPattern: 0,
    },
    ffn: { kind: "swiglu", bias: false, experts: 0, expertsUsed: 0 },
    embedScale: 1, postNorms: false, finalSoftcap: 0,
  };
}

export const llama: Architecture = {
  name: "llama",
  config: (file) => llamaLikeConfig(file, "llama", "interleaved"),
  forward: decoderForward,
};
