// What every training job shares (a language-model job, languageModelJob.ts; a ViT job,
// vitJob.ts): the optimizer's settings, the run's length and seed, when to validate and
// checkpoint, where the bundle goes and which backend trains. A job records its resolved options
// in each checkpoint's state.json ("run"), so resumeTraining (resumeJob.ts) rebuilds it exactly.

import type { ScheduleKind } from "../optim/schedule.js";
import type { TrainOptions } from "../train/trainer.js";
import type { LoopOutput } from "../train/loop.js";
import type { RunBundle } from "../io/runs/bundle.js";

/** The options of every job, all resolved (a job fills what its caller left out). */
export interface JobCommon {
  steps: number;
  /** Sequences (or images) per micro-batch. */
  batch: number;
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  schedule: ScheduleKind;
  warmup: number;
  /** Global gradient-norm limit (0: off). */
  clip: number;
  seed: number;
  /** Validation every n steps (0: at the start and the end only). */
  evalEvery: number;
  /** A checkpoint every n steps (0: only the final one). */
  saveEvery: number;
  /** The folder of run bundles: the run writes OUT/<id>/. */
  out: string;
  /** "ts" or "cpu" (default: cpu when the native addon built), and its thread count. */
  backend?: string;
  threads?: number;
}

/** The bundle folder of run bundles when a job names none. */
export const DEFAULT_RUNS_DIR = "runs";

/** The Trainer's options of a job (accum: micro-batches per step). */
export function trainOptionsOf(j: JobCommon, accum: number): TrainOptions {
  return {
    steps: j.steps, lr: j.lr, betas: j.betas, eps: j.eps, weightDecay: j.weightDecay,
    schedule: j.schedule, warmup: j.warmup, clip: j.clip, accum, seed: j.seed,
  };
}

/** What a job leaves behind: its bundle and the steps this call took (0 when a resumed run was already complete). */
export interface JobResult {
  bundle: RunBundle;
  stepsRun: number;
  /** The run's total steps. */
  steps: number;
}

/** A job's output: the loop's (quiet when absent). */
export type JobOutput = LoopOutput;
