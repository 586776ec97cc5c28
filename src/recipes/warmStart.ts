// warmStart: load any supported GGUF and continue training all of its weights (dequantized to
// float32). realize(model, options) then step(batch); save(path) writes an F32 GGUF checkpoint
// with the source's metadata and tensor names.

import { configOf } from "../archs/index.js";
import type { ModelConfig } from "../archs/config.js";
import { readGGUF, type GGUFFile } from "../io/gguf/reader.js";
import { DEFAULT_TRAIN_OPTIONS, Trainer, trainKernels, type RunOptions, type StepResult } from "../train/trainer.js";
import type { Batch } from "../data/batch.js";
import type { Parameters } from "../train/objectives.js";
import { parametersFromFile, writeCheckpoint } from "../train/params.js";

export interface RealizedRun {
  readonly source: GGUFFile;
  readonly config: ModelConfig;
  readonly params: Parameters;
  readonly trainer: Trainer;
  step(batch: Batch | readonly Batch[]): StepResult;
  save(path: string): void;
}

/**
 * The optimizer settings a pretrained model wants (the recipe's defaults; options override them).
 * A pretrained model sits in a minimum that a from-scratch learning rate throws it out of: on
 * SmolLM2-135M, 1e-3 (cosine, no warmup) took the training loss from 3.71 to 4.69 in 4 steps.
 * A sweep on SmolLM2 (docs/cli.md, "Learning rates for a pretrained model") picked these.
 */
export const WARM_START_DEFAULTS = { lr: 1e-4, warmup: 0 } as const;

export const warmStart = {
  name: "warm-start",
  defaults: WARM_START_DEFAULTS,
  realize(model: string | GGUFFile, options: RunOptions = {}): RealizedRun {
    const { backend, ...train } = options;
    const source = typeof model === "string" ? readGGUF(model) : model;
    const config = configOf(source);
    const params = parametersFromFile(source);
    const trainer = new Trainer(config, params, { ...DEFAULT_TRAIN_OPTIONS, ...WARM_START_DEFAULTS, ...train }, { kernels: trainKernels(backend) });
    return {
      source, config, params, trainer,
      step: (batch) => trainer.step(batch),
      save: (path) => writeCheckpoint(path, source, params, { "general.file_type": 0 }),
    };
  },
};
