// Llama (2, 3.x; also SmolLM2, TinyLlama, Mistral): pre-norm decoder blocks with RMSNorm,
// rotary positions on interleaved pairs, grouped-query attention and a SwiGLU feed-forward.
// decoderForward is every decoder's forward: Qwen 2/3, OLMoE, Gemma 2 and GPT-2 are configs
// of it (their files say what they switch on: biases, NEOX RoPE, q/k norms, experts, learned
// positions, post-norms, soft-caps, sliding windows).

import type { Ops, Value } from "../blocks/ops.js";
import { norm } from "../blocks/norm.js";
import { TENSORS } from "../blocks/tensorNames.js";
import { transformerBlock } from "../blocks/transformerBlock.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { baseConfig, ropeConfig, type ModelConfig } from "./config.js";
import { blockConfigs } from "./layers.js";
import type { Architecture } from "./model.js";

/**
 *   x = E[ids] · embedScale  (+ P[positions] without RoPE)          [N, d]
 *   for each layer:  x = x + Attn(norm(x)),  x = x + FFN(norm(x))   (+ post-norms: Gemma 2)
 *   logits = softcap(norm(x) Wₒᵤₜᵀ)                                  [N | S, vocab]
 * Inference: N = the new tokens of every sequence, S = the rows asked for; training: N = B·T.
 */
export function decoderForward<X extends Value>(ops: Ops<X>, c: ModelConfig, ids: Int32Array): X {
  let x = ops.embedding(TENSORS.tokenEmbd, ids);                                   // [N, d]
  if (c.embedScale !== 1) x = ops.scale(x, c.embedScale);
  if (!c.rope) x = ops.add(x, ops.embedding(TENSORS.positionEmbd, ops.positions));  // [N, d]
  blockConfigs(c).forEach((layer, l) => {
    x = transformerBlock(ops, x, layer, l);                                        // [N, d]
  });
  x = ops.lastRows(x);                                                             // [S, d]
  const logits = ops.linear(norm(ops, x, TENSORS.outputNorm, c.norm), c.tiedOutput ? TENSORS.tokenEmbd : TENSORS.output.weight);
  return c.finalSoftcap > 0 ? ops.softcap(logits, c.finalSoftcap) : logits;       // [S, vocab]
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
};
