// Loading the weights of a decoder from llama.cpp's tensor names, for any ModelConfig:
// blk.N.attn_norm, attn_q/k/v (or attn_qkv), attn_output, ffn_norm, ffn_gate/up/down
// (or ffn_*_exps for experts), post norms, output_norm, output (or the tied token_embd).

import type { AttentionConfig } from "../blocks/selfAttention.js";
import type { BlockConfig, BlockWeights } from "../blocks/transformerBlock.js";
import type { NormWeights } from "../blocks/norm.js";
import type { FeedForwardWeights } from "../blocks/feedForward.js";
import { ropeInvFreq, type RopeConfig } from "../primitives/index.js";
import { sliceWeightRows, type Weight } from "../tensor/weight.js";
import { isSlidingLayer, layerRope, type ModelConfig } from "./config.js";
import type { ModelWeights } from "./weights.js";

export interface DecoderWeights {
  tokenEmbd: Weight;
  positionEmbd?: Weight;
  blocks: BlockWeights[];
  blockConfigs: BlockConfig[];
  outputNorm: NormWeights;
  output: Weight;
}

function loadNorm(w: ModelWeights, name: string, c: ModelConfig, width = c.nEmbd): NormWeights {
  const bias = c.norm.kind === "layer" ? w.optionalVector(`${name}.bias`, width) ?? null : null;
  return { kind: c.norm.kind, eps: c.norm.eps, weight: w.vector(`${name}.weight`, width), bias };
}

/** Experts are stored as one 3-D tensor each for gate, up and down: [in, out, experts]. */
function loadExperts(w: ModelWeights, b: string, c: ModelConfig): FeedForwardWeights[] {
  const E = c.ffn.experts;
  const gate = w.need(`${b}.ffn_gate_exps.weight`, [c.nEmbd, c.nFF, E]);
  const up = w.need(`${b}.ffn_up_exps.weight`, [c.nEmbd, c.nFF, E]);
  const down = w.need(`${b}.ffn_down_exps.weight`, [c.nFF, c.nEmbd, E]);
  return Array.from({ length: E }, (_, e) => ({
    gate: { ...sliceWeightRows(gate, e * c.nFF, (e + 1) * c.nFF, `${gate.name}[${e}]`), dims: [c.nEmbd, c.nFF] },
    up: { ...sliceWeightRows(up, e * c.nFF, (e + 1) * c.nFF, `${up.name}[${e}]`), dims: [c.nEmbd, c.nFF] },
    down: { ...sliceWeightRows(down, e * c.nEmbd, (e + 1) * c.nEmbd, `${down.name}[${e}]`), dims: [c.nFF, c.nEmbd] },
  }));
}

function loadBlock(w: ModelWeights, l: number, c: ModelConfig): BlockWeights {
  const b = `blk.${l}`;
  const qWidth = c.nHead * c.headDim, kvWidth = c.nKVHead * c.headDim;
  const a = c.attention;
  let q: Weight, k: Weight, v: Weight;
  let qBias: Float32Array | undefined, kBias: Float32Array | undefined, vBias: Float32Array | undefined;
  if (a.fusedQKV) {
    const qkv = w.need(`${b}.attn_qkv.weight`, [c.nEmbd, qWidth + 2 * kvWidth]);
    [q, k, v] = [[0, qWidth], [qWidth, qWidth + kvWidth], [qWidth + kvWidth, qWidth + 2 * kvWidth]].map(([from, to]) => sliceWeightRows(qkv, from, to));
    const bias = a.qkvBias ? w.vector(`${b}.attn_qkv.bias`, qWidth + 2 * kvWidth) : undefined;
    [qBias, kBias, vBias] = bias ? [bias.subarray(0, qWidth), bias.subarray(qWidth, qWidth + kvWidth), bias.subarray(qWidth + kvWidth)] : [];
  } else {
    q = w.need(`${b}.attn_q.weight`, [c.nEmbd, qWidth]);
    k = w.need(`${b}.attn_k.weight`, [c.nEmbd, kvWidth]);
    v = w.need(`${b}.attn_v.weight`, [c.nEmbd, kvWidth]);
    if (a.qkvBias) {
      qBias = w.vector(`${b}.attn_q.bias`, qWidth);
      kBias = w.vector(`${b}.attn_k.bias`, kvWidth);
      vBias = w.vector(`${b}.attn_v.bias`, kvWidth);
    }
  }
  const normWidth = a.qkNorm === "head" ? [c.headDim, c.headDim] : [qWidth, kvWidth];
  const block: BlockWeights = {
    attnNorm: loadNorm(w, `${b}.attn_norm`, c),
    attn: {
      q, k, v, qBias, kBias, vBias,
      o: w.need(`${b}.attn_output.weight`, [qWidth, c.nEmbd]),
      oBias: a.outBias ? w.vector(`${b}.attn_output.bias`, c.nEmbd) : undefined,
      qNorm: a.qkNorm ? w.vector(`${b}.attn_q_norm.weight`, normWidth[0]) : undefined,
      kNorm: a.qkNorm ? w.vector(`${b}.attn_k_norm.weight`, normWidth[1]) : undefined,
    },
    ffnNorm: loadNorm(w, `${b}.ffn_norm`, c),
  };
  if (c.postNorms) {
    block.postAttnNorm = loadNorm(w, `${b}.post_attention_norm`, c);
    block.postFfnNorm = loadNorm(w, `${b}.post_ffw_norm`, c);
  }
  if (c.ffn.experts > 0) {
    block.experts = { router: w.need(`${b}.ffn_gate_inp.weight`, [c.nEmbd, c.ffn.experts]), experts: loadExperts(w, b, c) };
  } else {
    block.ffn = {
      gate: c.ffn.kind === "mlp" ? undefined : w.need(`${b}.ffn_gate.weight`, [c.nEmbd, c.nFF]),
      up: w.need(`${b}.ffn_up.weight`, [c.nEmbd, c.nFF]),
      down: w.need(`${b}.ffn_down.weight`, [c.nFF, c.nEmbd]),
      upBias: c.ffn.bias ? w.vector(`${b}.ffn_up.bias`, c.nFF) : undefined,
      downBias: c.ffn.bias ? w.vector(`${b}.ffn_down.bias`, c.nEmbd) : undefined,
    };
  }
  return block;
}

/** Layer l's attention: its window and its RoPE follow `isSlidingLayer` (archs/config.ts).
 *  `invFreqs` holds one frequency table per distinct RoPE, shared by the layers that use it. */
function attentionConfig(c: ModelConfig, l: number, freqFactors: Float32Array | null, invFreqs: Map<string, Float32Array>): AttentionConfig {
  const a = c.attention, r = layerRope(c, l);
  const rope: RopeConfig | null = c.rope && r && { base: r.base, dims: c.rope.dims, style: c.rope.style, freqScale: r.freqScale, freqFactors };
  let invFreq: Float32Array = new Float32Array(0);
  if (rope) {
    const key = `${rope.base} ${rope.freqScale}`;
    invFreq = invFreqs.get(key) ?? ropeInvFreq(rope);
    invFreqs.set(key, invFreq);
  }
  return {
    heads: c.nHead, kvHeads: c.nKVHead, headDim: c.headDim, rope, invFreq,
    qkNorm: a.qkNorm, normEps: c.norm.eps,
    attn: { scale: a.scale, softcap: a.softcap, window: isSlidingLayer(c, l) ? a.window : 0, causal: true },
  };
}

export function loadDecoder(w: ModelWeights, c: ModelConfig): DecoderWeights {
  const tokenEmbd = w.need("token_embd.weight", [c.nEmbd, c.nVocab]);
  const freqFactors = c.rope?.freqFactors ? w.vector("rope_freqs.weight", c.rope.dims / 2) : null;
  const invFreqs = new Map<string, Float32Array>();
  return {
    tokenEmbd,
    positionEmbd: c.rope ? undefined : w.need("position_embd.weight", [c.nEmbd, c.contextLength]),
    blocks: Array.from({ length: c.nLayer }, (_, l) => loadBlock(w, l, c)),
    blockConfigs: Array.from({ length: c.nLayer }, (_, l) => ({ attn: attentionConfig(c, l, freqFactors, invFreqs), ffn: c.ffn.kind, expertsUsed: c.ffn.expertsUsed })),
    outputNorm: loadNorm(w, "output_norm", c),
    output: c.tiedOutput ? tokenEmbd : w.need("output.weight", [c.nEmbd, c.nVocab]),
  };
}
