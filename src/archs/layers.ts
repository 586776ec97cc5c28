// What a decoder's config means layer by layer: each block's settings (the sliding-window rule
// lives here, once) and the tensors the decoder reads, with their ggml dims, by llama.cpp's
// names (blocks/tensorNames.ts): blk.N.attn_norm, attn_q/k/v (or attn_qkv), attn_output,
// ffn_norm, ffn_gate/up/down (or ffn_*_exps for experts), post norms, output_norm, output (or
// the tied token_embd).

import type { RopeSpec } from "../blocks/ops.js";
import type { AttentionConfig } from "../blocks/selfAttention.js";
import type { BlockConfig } from "../blocks/transformerBlock.js";
import { blockNames, TENSORS } from "../blocks/tensorNames.js";
import { isSlidingLayer, layerRope, type ModelConfig } from "./config.js";

/** A tensor a forward reads: its name and ggml dims; `optional`: read only if the file has it. */
export interface TensorSpec {
  name: string;
  dims: number[];
  optional?: boolean;
}

/** Layer l's RoPE: the config's, with the base and scale of its kind of layer (archs/config.ts layerRope). */
function ropeSpec(c: ModelConfig, l: number): RopeSpec | null {
  const r = layerRope(c, l);
  if (!c.rope || !r) return null;
  const { dims, style, freqFactors } = c.rope;
  return { base: r.base, dims, style, freqScale: r.freqScale, freqFactors };
}

/** Layer l's attention: heads, projections, RoPE and the options of the attention kernel. */
export function attentionConfig(c: ModelConfig, l: number): AttentionConfig {
  const a = c.attention;
  return {
    heads: c.nHead, kvHeads: c.nKVHead, headDim: c.headDim,
    qkvBias: a.qkvBias, fusedQKV: a.fusedQKV, outBias: a.outBias, qkNorm: a.qkNorm, normEps: c.norm.eps,
    rope: ropeSpec(c, l),
    attn: { scale: a.scale, softcap: a.softcap, window: isSlidingLayer(c, l) ? a.window : 0, causal: true },
  };
}

export function blockConfig(c: ModelConfig, l: number): BlockConfig {
  return {
    norm: c.norm, attn: attentionConfig(c, l),
    ffn: { kind: c.ffn.kind, bias: c.ffn.bias, experts: c.ffn.experts, expertsUsed: c.ffn.expertsUsed, width: c.nFF },
    postNorms: c.postNorms,
  };
}

const made = new WeakMap<ModelConfig, BlockConfig[]>();

/** Every layer's BlockConfig (made once per config object: a decode step only reads them). */
export function blockConfigs(c: ModelConfig): BlockConfig[] {
  let layers = made.get(c);
  if (!layers) made.set(c, (layers = Array.from({ length: c.nLayer }, (_, l) => blockConfig(c, l))));
  return layers;
}

/** The tensors a decoder of config c reads. */
export function decoderTensors(c: ModelConfig): TensorSpec[] {
  const d = c.nEmbd, F = c.nFF, E = c.ffn.experts, qW = c.nHead * c.headDim, kvW = c.nKVHead * c.headDim, a = c.attention;
  const out: TensorSpec[] = [];
  const add = (name: string, dims: number[], optional = false) => out.push(optional ? { name, dims, optional } : { name, dims });
  const norm = (n: { weight: string; bias: string }) => {
    add(n.weight, [d]);
    if (c.norm.kind === "layer") add(n.bias, [d], true);
  };
  add(TENSORS.tokenEmbd, [d, c.nVocab]);
  if (!c.rope) add(TENSORS.positionEmbd, [d, c.contextLength]);
  if (c.rope?.freqFactors) add(TENSORS.ropeFreqs, [c.rope.dims / 2]);
  for (let l = 0; l < c.nLayer; l++) {
    const n = blockNames(l);
    norm(n.attnNorm);
    if (a.fusedQKV) {
      add(n.attnQKV.weight, [d, qW + 2 * kvW]);
      if (a.qkvBias) add(n.attnQKV.bias, [qW + 2 * kvW]);
    } else {
      for (const [m, w] of [[n.attnQ, qW], [n.attnK, kvW], [n.attnV, kvW]] as const) {
        add(m.weight, [d, w]);
        if (a.qkvBias) add(m.bias, [w]);
      }
    }
    if (a.qkNorm) {
      add(n.attnQNorm.weight, [a.qkNorm === "head" ? c.headDim : qW]);
      add(n.attnKNorm.weight, [a.qkNorm === "head" ? c.headDim : kvW]);
    }
    add(n.attnOutput.weight, [qW, d]);
    if (a.outBias) add(n.attnOutput.bias, [d]);
    norm(n.ffnNorm);
    if (c.postNorms) { norm(n.postAttnNorm); norm(n.postFfnNorm); }
    if (E > 0) {
      add(n.ffnRouter.weight, [d, E]);
      add(n.ffnGateExps.weight, [d, F, E]);
      add(n.ffnUpExps.weight, [d, F, E]);
      add(n.ffnDownExps.weight, [F, d, E]);
    } else {
      if (c.ffn.kind !== "mlp") add(n.ffnGate.weight, [d, F]);
      add(n.ffnUp.weight, [d, F]);
      add(n.ffnDown.weight, [F, d]);
      if (c.ffn.bias) { add(n.ffnUp.bias, [F]); add(n.ffnDown.bias, [d]); }
    }
  }
  norm(TENSORS.outputNorm);
  if (!c.tiedOutput) add(TENSORS.output.weight, [d, c.nVocab]);
  return out;
}
