// warmStart: load any supported GGUF and continue training all of its weights (dequantized to
// float32). realize(model, options) then step(batch); save(path) writes an F32 GGUF checkpoint
// with the source's metadata and tensor names.

import { configOf } from "../archs/index.js";
import type { ModelConfig } from "../archs/config.js";
import { readGGUF, type GGUFFile } from "../io/gguf/reader.js";
import { DEFAULT_TRAIN_OPTIONS, Trainer, trainKernels, type RunOptions, type StepResult } from "../engines/train.js";
import type { Batch, Parameters } from "../engines/trainForward.js";
import { parametersFromFile, writeCheckpoint } from "../engines/trainParams.js";

export interface RealizedRun {
  readonly source: GGUFFile;
  readonly config: ModelConfig;
  readonly params: Parameters;
  readonly trainer: Trainer;
  step(batch: Batch | readonly Batch[]): StepResult;
  save(path: string): void;
}

export const warmStart = {
  name: "warm-start",
  realize(model: string | GGUFFile, options: RunOptions = {}): RealizedRun {
    const { backend, ...train } = options;
    const source = typeof model === "string" ? readGGUF(model) : model;
    const config = configOf(source);
    const params = parametersFromFile(source);
    const trainer = new Trainer(config, params, { ...DEFAULT_TRAIN_OPTIONS, ...train }, { kernels: trainKernels(backend) });
    return {
      source, config, params, trainer,
      step: (batch) => trainer.step(batch),
      save: (path) => writeCheckpoint(path, source, params, { "general.file_type": 0 }),
    };
  },
};
