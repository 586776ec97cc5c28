// The training loop's one step: forward + backward over each micro-batch (gradient
// accumulation: the mean of their gradients), global-norm clipping, the schedule's learning
// rate, and an AdamW update of the float32 parameters in place. What is minimized is an
// Objective: next-token prediction for a decoder, image classification for a ViT
// (engines/objectives.ts).

import type { ModelConfig } from "../archs/config.js";
import { AdamW } from "../optim/adamw.js";
import { clipScale, globalNorm } from "../optim/clip.js";
import { learningRate, type ScheduleKind } from "../optim/schedule.js";
import { trainKernelsFor, tsTrainKernels, type TrainKernels } from "../autograd/kernels/index.js";
import { selectBackend, type Device } from "../backends/index.js";
import type { Batch } from "../data/batch.js";
import { nextToken, type Objective, type Parameters, type TrainSetup } from "./objectives.js";

export interface TrainOptions {
  steps: number;
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  schedule: ScheduleKind;
  warmup: number;
  /** Global gradient-norm limit (0: no clipping). */
  clip: number;
  /** Micro-batches per step. */
  accum: number;
  seed: number;
}

/** Options of a recipe's realize(): the training options and the backend to train on
 *  (default: cpu when the native backend built, else ts). */
export type RunOptions = Partial<TrainOptions> & { backend?: Device };

/** The training kernels of a backend name, or of the default backend. */
export function trainKernels(backend?: Device): TrainKernels {
  return trainKernelsFor(backend ?? selectBackend(undefined, { quiet: true }));
}

export const DEFAULT_TRAIN_OPTIONS: TrainOptions = {
  steps: 100, lr: 1e-3, betas: [0.9, 0.95], eps: 1e-8, weightDecay: 0.1,
  schedule: "cosine", warmup: 0, clip: 1, accum: 1, seed: 0,
};

export interface StepResult {
  /** 0-based index of the step just taken. */
  step: number;
  /** Mean loss over the step's micro-batches, before the update. */
  loss: number;
  lr: number;
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
  /** What the step's batches held (tokens; images for a ViT). */
  tokens: number;
  seconds: number;
  /** The (accumulated) gradients, by GGUF name, before clipping (the update took them times
   *  clipScale(gradNorm, clip)): the trainer's own buffers, overwritten by its next step (copy
   *  them to keep them). */
  grads: Map<string, Float32Array>;
}

export class Trainer<B = Batch> {
  readonly optimizer: AdamW;
  readonly objective: Objective<B>;
  /** Steps taken so far. */
  stepsDone = 0;
  /** Gradient buffers kept across steps: the first micro-batch's (accumulated into, and
   *  returned), and the later micro-batches' (each added into the first's). */
  private readonly gradientBuffers = [new Map<string, Float32Array>(), new Map<string, Float32Array>()];

  /** `objective`: a decoder's config (next-token prediction) or any Objective. */
  constructor(objective: ModelConfig | Objective<B>, readonly params: Parameters, readonly options: TrainOptions, readonly setup: TrainSetup = {}) {
    this.objective = "lossAndGradients" in objective ? objective : (nextToken(objective) as unknown as Objective<B>);
    this.optimizer = new AdamW({ lr: options.lr, betas: options.betas, eps: options.eps, weightDecay: options.weightDecay }, setup.kernels);
  }

  /** The backend of the step's sweeps (the ts reference unless the setup names one). */
  private get kernels(): TrainKernels { return this.setup.kernels ?? tsTrainKernels; }

  /** One optimizer step over `microBatches` (one per accumulation step). */
  step(microBatches: B | readonly B[]): StepResult {
    const batches = Array.isArray(microBatches) ? (microBatches as readonly B[]) : [microBatches as B];
    if (batches.length === 0) throw new RangeError("Trainer.step: no batch");
    const start = performance.now();
    let loss = 0, tokens = 0;
    let grads: Map<string, Float32Array> | undefined;
    for (const [i, batch] of batches.entries()) {
      const r = this.objective.lossAndGradients(this.params, batch, { ...this.setup, gradients: this.gradientBuffers[Math.min(i, 1)] });
      loss += r.loss / batches.length;
      tokens += this.objective.count(batch);
      if (!grads) grads = r.grads;
      else for (const [name, g] of r.grads) this.kernels.accumulate(grads.get(name)!, g);
    }
    if (batches.length > 1) for (const g of grads!.values()) for (let i = 0; i < g.length; i++) g[i] /= batches.length;
    // Global-norm clipping, folded into the update (the gradients are read once more, not written).
    const gradNorm = globalNorm(grads!.values(), this.kernels);
    const o = this.options;
    const lr = learningRate(this.stepsDone, { kind: o.schedule, lr: o.lr, steps: o.steps, warmup: o.warmup });
    this.optimizer.step(this.params.values, this.params.dims, grads!, lr, clipScale(gradNorm, o.clip));
    const step = this.stepsDone++;
    return { step, loss, lr, gradNorm, tokens, seconds: (performance.now() - start) / 1000, grads: grads! };
  }

  /** The mean loss of a batch under the current parameters (no update). */
  evaluate(batch: B): number {
    return this.objective.loss(this.params, batch, this.setup);
  }
}
