// What training minimizes, computed by the architectures' own forwards (archs/*.ts) run on the
// tape (blocks/trainingOps.ts): the mean next-token cross-entropy of a decoder and the mean
// classification cross-entropy of a ViT, with the gradient of every trainable parameter.

import { forwardFor } from "../archs/index.js";
import type { ModelConfig } from "../archs/config.js";
import { patchify, vitForward } from "../archs/vit.js";
import { patchCount, patchSize, type VitConfig } from "../archs/vitConfig.js";
import { crossEntropy } from "../autograd/ops/index.js";
import { Tape, type Var } from "../autograd/tape.js";
import { gradientBuffer, TrainingOps, type Parameters, type TrainSetup } from "../blocks/trainingOps.js";
import type { Batch } from "../data/batch.js";

export type { Parameters, TrainSetup, Adapter } from "../blocks/trainingOps.js";
export { ParamVars, TrainingOps } from "../blocks/trainingOps.js";

export interface LossAndGradients {
  loss: number;
  /** ∂loss/∂parameter, by GGUF name, in the parameter's storage order. */
  grads: Map<string, Float32Array>;
}

/** What a Trainer minimizes, over batches of type B. */
export interface Objective<B> {
  /** The mean loss of a batch and ∂loss/∂θ for every trainable parameter. */
  lossAndGradients(params: Parameters, batch: B, setup: TrainSetup): LossAndGradients;
  /** The mean loss of a batch (no gradients). */
  loss(params: Parameters, batch: B, setup: TrainSetup): number;
  /** What a batch holds, for throughput: tokens, images. */
  count(batch: B): number;
}

/** A decoder's forward on a tape: logits [B·T, vocab] and the parameter leaves. */
export function trainingForward(tape: Tape, c: ModelConfig, params: Parameters, batch: Batch, setup: TrainSetup = {}): { logits: Var; leaves: [string, Var][] } {
  const { input, batch: B, seq: T } = batch;
  if (input.length !== B * T) throw new RangeError(`training: batch of ${B}×${T} needs ${B * T} ids, got ${input.length}`);
  const ops = new TrainingOps(tape, params, { batch: B, seq: T }, setup);
  const logits = forwardFor(c)(ops, c, input);                       // [B·T, vocab]
  return { logits, leaves: ops.params.entries() };
}

/** Mean next-token cross-entropy of a batch and ∂loss/∂θ for every trainable parameter (zeros where unused). */
export function lossAndGradients(c: ModelConfig, params: Parameters, batch: Batch, setup: TrainSetup = {}): LossAndGradients {
  const tape = new Tape(setup.kernels);
  const { logits, leaves } = trainingForward(tape, c, params, batch, setup);
  return backwardOf(tape, crossEntropy(logits, batch.target), params, leaves, setup);
}

/** Next-token prediction with a decoder of config c (the language-model recipes' objective). */
export function nextToken(c: ModelConfig): Objective<Batch> {
  return {
    lossAndGradients: (params, batch, setup) => lossAndGradients(c, params, batch, setup),
    loss(params, batch, setup) {
      const tape = new Tape(setup.kernels);
      const value = crossEntropy(trainingForward(tape, c, params, batch, setup).logits, batch.target).data[0];
      tape.release();
      return value;
    },
    count: (batch) => batch.input.length,
  };
}

/** B images and their labels. */
export interface ImageBatchInput {
  /** [B, C·H·W], standardized as the model's training data */
  pixels: Float32Array;
  /** [B] */
  labels: Int32Array;
  /** B */
  size: number;
}

/** The ViT's forward on a tape: class logits [B, classes] and the parameter leaves. */
export function vitTrainingForward(tape: Tape, c: VitConfig, params: Parameters, batch: ImageBatchInput, setup: TrainSetup = {}): { logits: Var; leaves: [string, Var][] } {
  const B = batch.size, n = patchCount(c);
  const ops = new TrainingOps(tape, params, { batch: B, seq: n + 1 }, setup);
  const logits = vitForward(ops, c, ops.input(patchify(batch.pixels, B, c), [B * n, patchSize(c)]), B);
  return { logits, leaves: ops.params.entries() };
}

/** Image classification with a ViT of config c: the vitTiny recipe's objective. */
export function imageClassification(c: VitConfig): Objective<ImageBatchInput> {
  return {
    lossAndGradients(params, batch, setup) {
      const tape = new Tape(setup.kernels);
      const { logits, leaves } = vitTrainingForward(tape, c, params, batch, setup);
      return backwardOf(tape, crossEntropy(logits, batch.labels), params, leaves, setup);
    },
    loss(params, batch, setup) {
      const tape = new Tape(setup.kernels);
      const value = crossEntropy(vitTrainingForward(tape, c, params, batch, setup).logits, batch.labels).data[0];
      tape.release();
      return value;
    },
    count: (batch) => batch.size,
  };
}

/** The loss's value and every trainable parameter's gradient (zeros where unused); the tape's
 *  buffers go back for the next step, the leaves' gradient buffers are handed over. */
function backwardOf(tape: Tape, loss: Var, params: Parameters, leaves: [string, Var][], setup: TrainSetup): LossAndGradients {
  tape.backward(loss);
  const value = loss.data[0];
  const leafGrads = new Map(leaves.map(([name, v]) => [name, v.grad] as const));
  const grads = new Map<string, Float32Array>();
  for (const [name, values] of params.values) {
    if (!setup.frozen?.has(name)) grads.set(name, leafGrads.get(name) ?? gradientBuffer(setup.gradients, name, values.length)?.fill(0) ?? new Float32Array(values.length));
  }
  tape.release();
  return { loss: value, grads };
}
