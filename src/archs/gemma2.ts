// Gemma 2, as a config of the shared decoder (archs/llama.ts decoderForward): embeddings scaled
// by √d, RMSNorm before and after both attention and the GeGLU FFN, attention logits
// soft-capped, sliding-window attention on even layers, NEOX RoPE, and the final logits
// soft-capped. (The (1 + w) norm offset is already folded into the GGUF.) The 27B model (46 layers)
// scales queries by 1/√(d / H) instead of 1/√d_h, as Gemma's reference code and llama.cpp do.

import { Metadata } from "../io/gguf/metadata.js";
import { llamaLikeConfig } from "./llama.js";
import { windowPatternOf } from "./config.js";
import type { Architecture } from "./model.js";

export const gemma2: Architecture = {
  name: "gemma2",
  config(file) {
    const c = llamaLikeConfig(file, "gemma2", "neox");
    const m = new Metadata(file.metadata, file.path);
    return {
      ...c,
      // llama.cpp: sliding layers rotate like the others unless the file gives their base.
      rope: c.rope && { ...c.rope, sliding: m.has("gemma2.rope.freq_base_swa") ? { base: m.number("gemma2.rope.freq_base_swa"), freqScale: c.rope.freqScale } : null },
      attention: {
        ...c.attention,
        scale: m.number("gemma2.attention.scale", c.nLayer === 46 ? 1 / Math.sqrt(Math.floor(c.nEmbd / c.nHead)) : 1 / Math.sqrt(c.headDim)),
        softcap: m.number("gemma2.attn_logit_softcapping", 50),
        window: m.count("gemma2.attention.sliding_window", 4096),
        windowPattern: windowPatternOf(m, "gemma2", c.nLayer, 2),
      },
      ffn: { ...c.ffn, kind: "geglu" },
      embedScale: Math.sqrt(c.nEmbd),
      postNorms: true,
      finalSoftcap: m.number("gemma2.final_logit_softcapping", 30),
    };
  },
};
