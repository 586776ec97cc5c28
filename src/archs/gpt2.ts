// GPT-2: learned position embeddings, LayerNorm with bias, one fused q/k/v projection with
// bias, and a GELU MLP with biases.

import { norm } from "../blocks/norm.js";
import { transformerBlock } from "../blocks/transformerBlock.js";
import { add, embedding, gatherRows, matmul } from "../primitives/index.js";
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

  //   x = E[ids] + P[positions]                                      [T, d]
  //   for each layer:  x = x + Attn(LN(x)),  x = x + MLP(LN(x))
  //   logits = LN(x) Wₒᵤₜᵀ                                           [T, vocab]
  forward(w, _c, { ids, segments, positions, lastRows, device }) {
    let x = add(embedding(w.tokenEmbd, ids, device), embedding(w.positionEmbd!, positions, device)); // [T, d]
    w.blocks.forEach((block, l) => {
      x = transformerBlock(x, block, w.blockConfigs[l], segments, l, positions);           // [T, d]
    });
    if (lastRows) x = gatherRows(x, lastRows);                                     // [S, d]
    return matmul(norm(x, w.outputNorm), w.output);                                 // [T|S, vocab]
  },
};
