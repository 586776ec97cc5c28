// Gemma 3: Gemma 2's blocks (√d embedding scale, RMSNorm before and after attention and the
// GeGLU FFN, NEOX RoPE, tied output) with per-head q/k RMSNorm instead of soft-capping, and
// local attention: in each run of 6 layers, 5 attend within a sliding window and rotate with
// base 10000, the 6th attends globally with the file's base and scaling. The forward is
// the shared decoder's (archs/llama.ts); everything that differs is config. Hyperparameters are read as llama.cpp does
// (src/models/gemma3.cpp).

import { llamaLikeConfig } from "./llama.js";
import { windowPatternOf } from "./config.js";
import type { Architecture } from "./model.js";
import { Metadata } from "../io/gguf/metadata.js";

export const gemma3: Architecture = {
  name: "gemma3",
  config(file) {
    const c = llamaLikeConfig(file, "gemma3", "neox");
    const m = new Metadata(file.metadata, file.path);
    const window = m.count("gemma3.attention.sliding_window", 0);
    // Gemma's reference code scales q by 1/√(d / H) for the 27B model (62 layers), 1/√d_h otherwise.
    const scale = m.number("gemma3.attention.scale", c.nLayer === 62 ? 1 / Math.sqrt(Math.floor(c.nEmbd / c.nHead)) : 1 / Math.sqrt(c.headDim));
    return {
      ...c,
      rope: c.rope && {
        ...c.rope,
        // Local layers: their own base, never scaled (llama.cpp's rope_freq_*_train_swa).
        sliding: window > 0 ? { base: m.number("gemma3.rope.freq_base_swa", 10000), freqScale: 1 } : null,
      },
      attention: {
        ...c.attention,
        qkNorm: "head",
        scale,
        window,
        windowPattern: window > 0 ? windowPatternOf(m, "gemma3", c.nLayer, 6) : 0,
      },
      ffn: { ...c.ffn, kind: "geglu" },
      embedScale: Math.sqrt(c.nEmbd),
      postNorms: true,
      finalSoftcap: m.number("gemma3.final_logit_softcapping", 0),
    };
  },
};
