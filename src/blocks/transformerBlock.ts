// One pre-norm transformer block:
//   x = x + PostNorm(Attn(Norm(x)))        (PostNorm only in Gemma 2)
//   x = x + PostNorm(FFN(Norm(x)))         (FFN: dense, or a mixture of experts)

import { feedForward, type FeedForwardKind } from "./feedForward.js";
import { mixtureOfExperts } from "./mixtureOfExperts.js";
import { addNorm, norm, type NormConfig } from "./norm.js";
import type { Ops, Value } from "./ops.js";
import { selfAttention, type AttentionConfig } from "./selfAttention.js";
import { blockNames } from "./tensorNames.js";

/** One layer's settings (archs/layers.ts derives them from a ModelConfig). */
export interface BlockConfig {
  norm: NormConfig;
  attn: AttentionConfig;
  ffn: {
    kind: FeedForwardKind;
    /** The MLP's projections carry biases (GPT-2). */
    bias: boolean;
    /** Mixture of experts: how many there are and how many each token uses (0: dense). */
    experts: number;
    expertsUsed: number;
    /** Hidden width (of each expert). */
    width: number;
  };
  /** Normalize the attention's and the FFN's outputs too (Gemma 2). */
  postNorms: boolean;
}

/** x: [T, d] → [T, d], layer `layer` (ops.block: inference reuses its activations' memory after
 *  it, and x's: the forward carries on from the output) */
export function transformerBlock<X extends Value>(ops: Ops<X>, x: X, c: BlockConfig, layer: number): X {
  return ops.block(() => block(ops, x, c, layer), x);
}

function block<X extends Value>(ops: Ops<X>, x: X, c: BlockConfig, layer: number): X {
  const n = blockNames(layer);
  // The attention in a block of its own: its arrays are free for the FFN's.
  let h = ops.block(() => selfAttention(ops, norm(ops, x, n.attnNorm, c.norm), n, c.attn, layer)); // [T, d]
  if (c.postNorms) h = norm(ops, h, n.postAttnNorm, c.norm);
  const [mid, g] = addNorm(ops, x, h, n.ffnNorm, c.norm);                           // x + h and its norm: [T, d]
  let f = c.ffn.experts > 0
    ? mixtureOfExperts(ops, g, n, c.ffn.experts, c.ffn.expertsUsed, c.ffn.width)
    : feedForward(ops, g, { gate: n.ffnGate, up: n.ffnUp, down: n.ffnDown }, c.ffn.kind, c.ffn.bias); // [T, d]
  if (c.postNorms) f = norm(ops, f, n.postFfnNorm, c.norm);
  return ops.add(mid, f);                                                             // [T, d]
}
