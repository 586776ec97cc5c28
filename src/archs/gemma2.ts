// Gemma 2: embeddings scaled by √d, RMSNorm before and after both attention and the GeGLU
// FFN, attention logits soft-capped, sliding-window attention on even layers, NEOX RoPE, and
// the final logits soft-capped. (The (1 + w) norm offset is already folded into the GGUF.)

import { norm } from "../blocks/norm.js";
import { transformerBlock } from "../blocks/transformerBlock.js";
import { embedding, gatherRows, matmul, scale, softcap } from "../primitives/index.js";
import { llamaLikeConfig } from "./llama.js";
import { windowPatternOf } from "./config.js";
import type { Architecture } from "./model.js";
import { Metadata } from "../io/gguf/metadata.js";

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

  // (Gemma 3 runs this forward too, with no final soft-cap unless its file sets one.)
  //   x = √d · E[ids]                                                [T, d]
  //   for each layer:  x = x + postNorm(Attn(norm(x))),  x = x + postNorm(GeGLU(norm(x)))
  //   logits = cap · tanh(norm(x) Wₒᵤₜᵀ / cap)                        [T, vocab]
  forward(w, c, { ids, segments, positions, lastRows, device }) {
    let x = scale(embedding(w.tokenEmbd, ids, device), c.embedScale);               // [T, d]
    w.blocks.forEach((block, l) => {
      x = transformerBlock(x, block, w.blockConfigs[l], segments, l, positions);           // [T, d]
    });
    if (lastRows) x = gatherRows(x, lastRows);                                     // [S, d]
    const logits = matmul(norm(x, w.outputNorm), w.output);                        // [T|S, vocab]
    return c.finalSoftcap > 0 ? softcap(logits, c.finalSoftcap) : logits;
  },
};
