// Qwen 2 / 2.5: Llama with biases on the q, k, v projections and half-split (NEOX) RoPE.
// Qwen 3: no biases, RMSNorm of each head's q and k before RoPE, head size set on its own.

import { llamaLikeConfig } from "./llama.js";
import type { Architecture } from "./model.js";

export const qwen2: Architecture = {
  name: "qwen2",
  config(file) {
    const c = llamaLikeConfig(file, "qwen2", "neox");
    return { ...c, attention: { ...c.attention, qkvBias: true } };
  },
};

export const qwen3: Architecture = {
  name: "qwen3",
  config(file) {
    const c = llamaLikeConfig(file, "qwen3", "neox");
    return { ...c, attention: { ...c.attention, qkNorm: "head" } };
  },
};
