// The ViT's training forward: a batch of images through archs/vit.ts's computation on a tape,
// the mean cross-entropy of the class logits, and the gradient of every parameter. Line for
// line the inference forward, with the class token joined to each image's patches by concatRows
// and the positions added as an embedding lookup (whose backward sums over the batch).

import { patchify } from "../archs/vit.js";
import { patchCount, patchSize, type VitConfig } from "../archs/vitConfig.js";
import { Tape, type Var } from "../autograd/tape.js";
import { add, attention, concatRows, crossEntropy, embedding, gatherRows, layerNorm, linear, reshape, sliceRows } from "../autograd/ops/index.js";
import type { Objective } from "./train.js";
import { feedForward, gradientsOf, ParamVars, type LossAndGradients, type Parameters, type TrainSetup } from "./trainForward.js";

/** B images and their labels. */
export interface ImageBatchInput {
  /** [B, C·H·W], standardized as the model's training data */
  pixels: Float32Array;
  /** [B] */
  labels: Int32Array;
  /** B */
  size: number;
}

//   E = patches W_pᵀ + b_p;  X = [x_class; E] + W_pos;  blocks;  z = LN(X[0]) W_uᵀ + b_u
export function vitTrainingForward(tape: Tape, c: VitConfig, params: Parameters, batch: ImageBatchInput, setup: TrainSetup = {}): { logits: Var; leaves: [string, Var][] } {
  const B = batch.size, n = patchCount(c), T = n + 1, d = c.nEmbd, H = c.nHead, D = c.headDim;
  const P = new ParamVars(tape, params, setup);
  const ln = (x: Var, name: string) => layerNorm(x, P.get(`${name}.weight`), P.get(`${name}.bias`), c.normEps);
  const lin = (x: Var, name: string) => linear(x, P.get(`${name}.weight`), P.get(`${name}.bias`));

  const patches = tape.constant(patchify(batch.pixels, B, c), [B * n, patchSize(c)]); // [B·n, C·P·P]
  const E = lin(patches, "patch_embd");                                              // [B·n, d]
  const cls = reshape(P.get("class_embd.weight"), [1, d]);                           // [1, d]
  let x = concatRows(Array.from({ length: B }, (_, b) => [cls, sliceRows(E, b * n, (b + 1) * n)]).flat()); // [B·T, d]
  x = add(x, embedding(P.get("position_embd.weight"), new Int32Array(B * T).map((_, i) => i % T)));
  for (let l = 0; l < c.nLayer; l++) {
    const b = `blk.${l}`, h = ln(x, `${b}.attn_norm`);                               // [B·T, d]
    const q = reshape(lin(h, `${b}.attn_q`), [B * T, H, D]), k = lin(h, `${b}.attn_k`), v = lin(h, `${b}.attn_v`);
    const a = attention(q, k, v, { batch: B, seq: T, heads: H, kvHeads: H, headDim: D },
      { scale: 1 / Math.sqrt(D), softcap: 0, window: 0, causal: false });           // [B·T, H·D], bidirectional
    x = add(x, lin(a, `${b}.attn_output`));
    const f = feedForward(ln(x, `${b}.ffn_norm`), {
      up: P.get(`${b}.ffn_up.weight`), upBias: P.get(`${b}.ffn_up.bias`), down: P.get(`${b}.ffn_down.weight`), downBias: P.get(`${b}.ffn_down.bias`),
    }, "mlp");                                                                       // [B·T, d]
    x = add(x, f);
  }
  const first = gatherRows(x, Array.from({ length: B }, (_, i) => i * T));          // [B, d], the class tokens
  return { logits: lin(ln(first, "output_norm"), "output"), leaves: P.entries() };  // [B, classes]
}

/** Image classification with a ViT of config c: the vitTiny recipe's objective. */
export function imageClassification(c: VitConfig): Objective<ImageBatchInput> {
  const loss = (params: Parameters, batch: ImageBatchInput, setup: TrainSetup) => {
    const tape = new Tape(setup.kernels);
    const { logits, leaves } = vitTrainingForward(tape, c, params, batch, setup);
    return { tape, loss: crossEntropy(logits, batch.labels), leaves };
  };
  return {
    lossAndGradients(params, batch, setup): LossAndGradients {
      const { tape, loss: l, leaves } = loss(params, batch, setup);
      tape.backward(l);
      const value = l.data[0], grads = gradientsOf(params, leaves, setup);
      tape.release();
      return { loss: value, grads };
    },
    loss: (params, batch, setup) => loss(params, batch, setup).loss.data[0],
    count: (batch) => batch.size,
  };
}
