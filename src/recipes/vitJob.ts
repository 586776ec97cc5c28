// A ViT training job: what `toy train vit` runs, as a library call. trainVit(options) trains a
// Vision Transformer (vitTiny.ts) from scratch to classify the images of `data` (MNIST's IDX
// files, or class folders of PNG/JPEG; io/images/dataset.ts). The run bundle is the language
// models' (io/runs/bundle.ts): events.jsonl with `accuracy` in its eval events, loss.svg,
// checkpoints with their optimizer state and the batch position ({epoch, index} in state.json's
// "rng"), so resumeTraining (resumeJob.ts) continues exactly.

import { resolve } from "node:path";
import { UsageError } from "../errors.js";
import { prepareBackend, selectBackend } from "../backends/index.js";
import { DEFAULT_TRAIN_OPTIONS } from "../train/trainer.js";
import { runLoop } from "../train/loop.js";
import { ImageBatches, loadImageData, type ImageSplit } from "../io/images/index.js";
import { readGGUF } from "../io/gguf/reader.js";
import { RunBundle, type Checkpoint } from "../io/runs/bundle.js";
import { DEFAULT_VIT_CONFIG, VIT_CONFIGS, vitConfigFor, vitTiny, type VitRun } from "./vitTiny.js";
import { DEFAULT_RUNS_DIR, trainOptionsOf, type JobCommon, type JobOutput, type JobResult } from "./jobCommon.js";

/** A ViT job, resolved: every field a run records. */
export interface VitJob extends JobCommon {
  /** The images: MNIST's IDX files (train-…/t10k-…, plain or .gz) or one sub-folder per class. */
  data: string;
  /** The model shape, a name of VIT_CONFIGS. */
  config: string;
  /** MNIST: images to train on and to evaluate on (default: all of train and of t10k, or 4/5 and 1/5 of a lone pair). */
  trainCount?: number;
  evalCount?: number;
  /** Random translation by up to k pixels each way (0: off). */
  augment: number;
}

/** What a caller gives: the images, and whatever it sets (the rest takes VIT_DEFAULTS). */
export type VitJobOptions = Partial<VitJob> & { data: string };

/** Defaults: what reaches 97% on MNIST's last 2,000 test digits from its first 8,000 (docs/vit.md). */
export const VIT_DEFAULTS = { steps: 2500, batch: 64, augment: 1, lr: 4e-3, weightDecay: 0.05, warmup: 125, evalEvery: 625, saveEvery: 625 };

/** A job with every option the caller left out filled in from VIT_DEFAULTS. */
export function vitJob(options: VitJobOptions): VitJob {
  const d = DEFAULT_TRAIN_OPTIONS;
  const defaults: VitJob = {
    data: options.data, config: DEFAULT_VIT_CONFIG, ...VIT_DEFAULTS,
    betas: d.betas, eps: d.eps, schedule: d.schedule, clip: d.clip, seed: d.seed, out: DEFAULT_RUNS_DIR,
  };
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  return { ...defaults, ...given };
}

/** What a checkpoint records to rebuild a ViT run (state.json "run"). */
export interface VitSpec {
  recipe: "vit";
  flags: VitJob;
}

/**
 * Train a ViT as `toy train vit` does: load the images, make the run bundle OUT/<id>/ and run the
 * loop to the end, reporting accuracy at each validation. Options left out take VIT_DEFAULTS.
 */
export async function trainVit(options: VitJobOptions, output: JobOutput = {}): Promise<JobResult> {
  const job = vitJob(options);
  if (!VIT_CONFIGS[job.config]) throw new UsageError(`--config ${job.config}: unknown (known: ${Object.keys(VIT_CONFIGS).join(", ")})`);
  const spec: VitSpec = { recipe: "vit", flags: { ...job, data: resolve(job.data) } };
  return runVit(spec, () => RunBundle.create(job.out, `vit-${job.config}`), undefined, output);
}

/** Run (or, from `ckpt`, continue) the ViT run a spec describes. */
export async function runVit(spec: VitSpec, openBundle: () => RunBundle, ckpt: Checkpoint | undefined, output: JobOutput): Promise<JobResult> {
  const job = spec.flags;
  await prepareBackend(job.backend);
  const backend = selectBackend(job.backend, { threads: job.threads });
  // Class folders split by seed 0 whatever the seed is, so toy eval --data finds the same split.
  const data: ImageSplit = loadImageData(job.data, { trainCount: job.trainCount, evalCount: job.evalCount });
  if (job.batch > data.train.count) throw new UsageError(`--batch ${job.batch}: the training split holds only ${data.train.count} images`);
  const options = { ...trainOptionsOf(job, 1), backend };
  const run: VitRun = ckpt
    ? vitTiny.resume(readGGUF(ckpt.ggufPath), options)
    : vitTiny.realize(vitConfigFor(data.train, job.config), { ...options, classes: data.train.classes, normalization: data.normalization, name: `toy-vit-${job.config}` });
  const batches = new ImageBatches(data.train, { batchSize: job.batch, seed: job.seed, augment: job.augment > 0 ? { maxShift: job.augment } : null });
  if (ckpt) batches.state = { epoch: ckpt.state.rng[0], index: ckpt.state.rng[1] };
  const bundle = openBundle();
  await runLoop({
    run, bundle, ckpt, flags: job, backend, saveInitial: false, unit: "images",
    start: { recipe: "vit", model: `${job.config} (from scratch)`, data: job.data, data_split: data.description, config: run.config },
    nextBatch: () => [batches.next()],
    samplerState: () => [batches.state.epoch, batches.state.index],
    evaluate: data.eval.count === 0 ? null : () => {
      const r = run.evaluate(data.eval);
      return { fields: { val_loss: r.loss, accuracy: r.accuracy }, text: `validation loss ${r.loss.toFixed(4)}  accuracy ${(100 * r.accuracy).toFixed(2)}% (${r.correct}/${r.count})` };
    },
    options: trainOptionsOf(job, 1),
    spec: spec as unknown as Record<string, unknown>,
  }, output);
  return { bundle, stepsRun: job.steps - (ckpt?.state.step ?? 0), steps: job.steps };
}
