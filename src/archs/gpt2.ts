// GPT-2, as a config of the shared decoder (archs/llama.ts decoderForward): learned position
// embeddings (no RoPE), LayerNorm with bias, one fused q/k/v projection with bias, and a GELU
// MLP with biases.

import { baseConfig } from "./config.js";
import type { Architecture } from "./model.js";

export const gpt2: Architecture = {
  name: "gpt2",
  config(file) {
    const { m, ...base } = baseConfig(file, "gpt2");
    return {
      ...base,
      norm: { kind: "layer", eps: m.number("gpt2.attention.layer_norm_epsilon", 1e-5) },
      rope: null,
      attention: { qkvBias: true, fusedQKV: true, outBias: true, qkNorm: null, scale: 1 / Math.sqrt(base.headDim), softcap: 0, window: 0, windowPattern: 0 },
      ffn: { kind: "mlp", bias: true, experts: 0, expertsUsed: 0 },
      embedScale: 1, postNorms: false, finalSoftcap: 0,
    };
  },
};
