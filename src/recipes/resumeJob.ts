// Continue a training run from its bundle, as `toy train --resume runs/<id>` does: the last
// complete checkpoint's state.json says which job it was (its "run"), its weights, optimizer
// state and data position; the loop continues onto exactly the numbers of an uninterrupted run.

import { existsSync } from "node:fs";
import { ToyError, UsageError } from "../errors.js";
import { RunBundle } from "../io/runs/bundle.js";
import type { JobOutput, JobResult } from "./jobCommon.js";
import { runLanguageModel, type LanguageModelSpec } from "./languageModelJob.js";
import { runVit, type VitSpec } from "./vitJob.js";

/** The job a bundle records, as its checkpoints hold it. */
export type RecordedJob = LanguageModelSpec | VitSpec;

/**
 * Resume the run in `dir` from its last complete checkpoint. A run that already finished is left
 * as it is (stepsRun 0). `output` may depend on the recorded job (e.g. the CLI's --json).
 */
export async function resumeTraining(dir: string, output: JobOutput | ((job: RecordedJob) => JobOutput) = {}): Promise<JobResult> {
  if (!existsSync(dir)) throw new UsageError(`--resume ${dir}: no such run folder`);
  const bundle = new RunBundle(dir);
  const ckpt = bundle.latest();
  if (!ckpt) throw new ToyError(`--resume ${dir}: no complete checkpoint in ${bundle.weights}`);
  if (ckpt.state.gguf === "final.gguf" || ckpt.state.gguf === "adapter.gguf") {
    return { bundle, stepsRun: 0, steps: ckpt.state.step };
  }
  const spec = ckpt.state.run as unknown as RecordedJob;
  const out = typeof output === "function" ? output(spec) : output;
  if (spec.recipe === "vit") return runVit(spec, () => bundle, ckpt, out);
  return runLanguageModel(spec, () => bundle, ckpt, out);
}
