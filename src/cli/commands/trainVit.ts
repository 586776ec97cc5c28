// toy train vit: flags → the library's trainVit (src/recipes/vitJob.ts, which says what the run
// does and writes) → the loop's output on the command line (./trainFlags.ts).

import { Command } from "commander";
import { DEFAULT_TRAIN_OPTIONS } from "../../train/trainer.js";
import { DEFAULT_VIT_CONFIG, VIT_CONFIGS } from "../../recipes/vitTiny.js";
import { trainVit, VIT_DEFAULTS } from "../../recipes/vitJob.js";
import { DEFAULT_RUNS_DIR } from "../../recipes/jobCommon.js";
import { int } from "../common.js";
import { backendOptions } from "./options.js";
import { loopOutput, optimizerFlags, type CommonTrainFlags } from "./trainFlags.js";

export interface VitFlags extends CommonTrainFlags {
  data: string;
  config: string;
  trainCount?: number;
  evalCount?: number;
  augment: number;
}

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
    .option("--out <dir>", "folder of run bundles (the bundle is DIR/<id>/)", DEFAULT_RUNS_DIR);
  backendOptions(cmd);
  return cmd.option("--json", "print the toy/v1 events as JSON lines (no progress bar)")
    .action((flags: VitFlags) => trainVit(flags, loopOutput(flags.json, "images")).then(() => undefined));
}
