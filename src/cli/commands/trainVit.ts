// toy train vit: a Vision Transformer (recipes/vitTiny.ts) trained from scratch to classify the
// images of --data DIR (MNIST's IDX files, or class folders of PNG/JPEG; io/images/dataset.ts).
// The run bundle is the language models' (io/runs/bundle.ts): events.jsonl with `accuracy` in
// its eval events, loss.svg, checkpoints with their optimizer state and the batch position
// ({epoch, index} in state.json's "rng"), so `toy train --resume` continues exactly.

import { resolve } from "node:path";
import { Command } from "commander";
import { UsageError } from "../../errors.js";
import { DEFAULT_TRAIN_OPTIONS, type TrainOptions } from "../../train/trainer.js";
import { ImageBatches, loadImageData, type ImageSplit } from "../../io/images/index.js";
import { readGGUF } from "../../io/gguf/reader.js";
import { RunBundle, type Checkpoint } from "../../io/runs/bundle.js";
import { DEFAULT_VIT_CONFIG, VIT_CONFIGS, vitConfigFor, vitTiny, type VitRun } from "../../recipes/vitTiny.js";
import { selectBackend } from "../../backends/index.js";
import { int } from "../common.js";
import { backendOptions } from "./options.js";
import { runLoop } from "../../train/loop.js";
import { loopOutput, optimizerFlags, type CommonTrainFlags } from "./trainFlags.js";

export interface VitFlags extends CommonTrainFlags {
  data: string;
  config: string;
  trainCount?: number;
  evalCount?: number;
  augment: number;
}

/** Defaults: what reaches 97% on MNIST's last 2,000 test digits from its first 8,000 (docs/vit.md). */
export const VIT_DEFAULTS = { steps: 2500, batch: 64, augment: 1, lr: 4e-3, weightDecay: 0.05, warmup: 125, evalEvery: 625, saveEvery: 625 };

export function vitCommand(): Command {
  const d = DEFAULT_TRAIN_OPTIONS, v = VIT_DEFAULTS;
  const cmd = new Command("vit")
    .description("a Vision Transformer from scratch on a folder of images (MNIST's IDX files, or class folders of PNG/JPEG); reports accuracy")
    .requiredOption("--data <dir>", "the images: MNIST's IDX files (train-…/t10k-…, plain or .gz) or one sub-folder per class")
    .option("--config <name>", `the model shape (${Object.keys(VIT_CONFIGS).join(", ")})`, DEFAULT_VIT_CONFIG)
    .option("--train-count <n>", "MNIST: images to train on (default: all of train, or the first 4/5 of a lone pair)", int("--train-count", 1))
    .option("--eval-count <n>", "MNIST: images to evaluate on (default: all of t10k, or the last 1/5 of a lone pair)", int("--eval-count", 1))
    .option("--steps <n>", "optimizer steps", int("--steps", 1), v.steps)
    .option("--batch <n>", "images per step", int("--batch", 1), v.batch)
    .option("--augment <k>", "random translation by up to k pixels each way (0: off)", int("--augment", 0), v.augment);
  optimizerFlags(cmd, v)
    .option("--seed <n>", "random seed (initial weights, batch order, augmentation)", int("--seed", 0), d.seed)
    .option("--eval-every <n>", "accuracy on the evaluation split every n steps (0: start and end only)", int("--eval-every", 0), v.evalEvery)
    .option("--save-every <n>", "write a checkpoint every n steps (0: only the final one)", int("--save-every", 0), v.saveEvery)
    .option("--out <dir>", "folder of run bundles (the bundle is DIR/<id>/)", "runs");
  backendOptions(cmd);
  return cmd.option("--json", "print the toy/v1 events as JSON lines (no progress bar)")
    .action((flags: VitFlags) => {
      if (!VIT_CONFIGS[flags.config]) throw new UsageError(`--config ${flags.config}: unknown (known: ${Object.keys(VIT_CONFIGS).join(", ")})`);
      const spec: VitSpec = { recipe: "vit", flags: { ...flags, data: resolve(flags.data) } };
      return trainVit(spec, () => RunBundle.create(flags.out, `vit-${flags.config}`));
    });
}

/** What a checkpoint records to rebuild a ViT run (state.json "run"). */
export interface VitSpec {
  recipe: "vit";
  flags: VitFlags;
}

function optionsOf(f: VitFlags): TrainOptions {
  return { steps: f.steps, lr: f.lr, betas: f.betas, eps: f.eps, weightDecay: f.weightDecay, schedule: f.schedule, warmup: f.warmup, clip: f.clip, accum: 1, seed: f.seed };
}

export function trainVit(spec: VitSpec, openBundle: () => RunBundle, ckpt?: Checkpoint): Promise<void> {
  const { flags } = spec;
  const backend = selectBackend(flags.backend, { threads: flags.threads });
  // Class folders split by seed 0 whatever --seed is, so toy eval --data finds the same split.
  const data: ImageSplit = loadImageData(flags.data, { trainCount: flags.trainCount, evalCount: flags.evalCount });
  if (flags.batch > data.train.count) throw new UsageError(`--batch ${flags.batch}: the training split holds only ${data.train.count} images`);
  const options = { ...optionsOf(flags), backend };
  const run: VitRun = ckpt
    ? vitTiny.resume(readGGUF(ckpt.ggufPath), options)
    : vitTiny.realize(vitConfigFor(data.train, flags.config), { ...options, classes: data.train.classes, normalization: data.normalization, name: `toy-vit-${flags.config}` });
  const batches = new ImageBatches(data.train, { batchSize: flags.batch, seed: flags.seed, augment: flags.augment > 0 ? { maxShift: flags.augment } : null });
  if (ckpt) batches.state = { epoch: ckpt.state.rng[0], index: ckpt.state.rng[1] };
  return runLoop({
    run, bundle: openBundle(), ckpt, flags, backend, saveInitial: false, unit: "images",
    start: { recipe: "vit", model: `${flags.config} (from scratch)`, data: flags.data, data_split: data.description, config: run.config },
    nextBatch: () => [batches.next()],
    samplerState: () => [batches.state.epoch, batches.state.index],
    evaluate: data.eval.count === 0 ? null : () => {
      const r = run.evaluate(data.eval);
      return { fields: { val_loss: r.loss, accuracy: r.accuracy }, text: `validation loss ${r.loss.toFixed(4)}  accuracy ${(100 * r.accuracy).toFixed(2)}% (${r.correct}/${r.count})` };
    },
    options: optionsOf(flags),
    spec: spec as unknown as Record<string, unknown>,
  }, loopOutput(flags.json, "images"));
}
