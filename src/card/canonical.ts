// A ModelConfig with its keys in the order the interface declares them, so that the JSON of a
// config read from a model file and of one parsed from its card are the same bytes.

import type { ModelConfig } from "../archs/config.js";

export function canonicalConfig(c: ModelConfig): ModelConfig {
  return {
    arch: c.arch,
    nVocab: c.nVocab,
    nEmbd: c.nEmbd,
    nLayer: c.nLayer,
    nHead: c.nHead,
    nKVHead: c.nKVHead,
    headDim: c.headDim,
    nFF: c.nFF,
    contextLength: c.contextLength,
    norm: { kind: c.norm.kind, eps: c.norm.eps },
    rope: c.rope && {
      base: c.rope.base, dims: c.rope.dims, style: c.rope.style, freqScale: c.rope.freqScale, freqFactors: c.rope.freqFactors,
      sliding: c.rope.sliding ? { base: c.rope.sliding.base, freqScale: c.rope.sliding.freqScale } : null,
    },
    attention: {
      qkvBias: c.attention.qkvBias,
      fusedQKV: c.attention.fusedQKV,
      outBias: c.attention.outBias,
      qkNorm: c.attention.qkNorm,
      scale: c.attention.scale,
      softcap: c.attention.softcap,
      window: c.attention.window,
      windowPattern: c.attention.windowPattern,
    },
    ffn: { kind: c.ffn.kind, bias: c.ffn.bias, experts: c.ffn.experts, expertsUsed: c.ffn.expertsUsed },
    embedScale: c.embedScale,
    postNorms: c.postNorms,
    finalSoftcap: c.finalSoftcap,
    tiedOutput: c.tiedOutput,
  };
}
