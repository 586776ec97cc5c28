// A language-model training job: what `toy train from-scratch | warm-start | lora` runs, as a
// library call. trainLanguageModel(options) realizes the recipe, loads the data, makes the run
// bundle OUT/<id>/ and runs the loop (src/train/loop.ts): events.jsonl (toy/v1), loss.svg,
// weights/step-N.gguf checkpoints with their optimizer and random state, weights/final.gguf
// (adapter.gguf for lora). resumeTraining (resumeJob.ts) continues it from its last checkpoint.
// Data: `ids` (a JSON file of T+1 ids) trains on one fixed batch (input = all but the last,
// target = all but the first), for checking against other frameworks; otherwise seeded random
// windows of `data` (default: the corpus shipped in assets/corpus): a text tokenized with the
// model's tokenizer, or pre-tokenized uint16/uint32 ids (io/runs/corpus.ts says which), the last
// 10% held out for the validation loss (io/runs/windows.ts).

import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { Rng } from "../data/rng.js";
import type { Batch } from "../data/batch.js";
import { cpuBackend, prepareBackend, selectBackend, type Device } from "../backends/index.js";
import { DEFAULT_TRAIN_OPTIONS } from "../train/trainer.js";
import { runLoop } from "../train/loop.js";
import { tokenizerFromMetadata } from "../io/tokenizer/index.js";
import { RunBundle, type Checkpoint } from "../io/runs/bundle.js";
import { corpusTokens, dataFormatOf, defaultCorpusPath, type DataFormat } from "../io/runs/corpus.js";
import { trainingData } from "../io/runs/windows.js";
import { resolveModelPath } from "../io/discovery/modelNames.js";
import { DEFAULT_SCRATCH_CONFIG, fromScratch, SCRATCH_CONFIGS } from "./fromScratch.js";
import { DEFAULT_LORA_TARGETS, lora } from "./lora.js";
import { warmStart, type RealizedRun } from "./warmStart.js";
import { DEFAULT_RUNS_DIR, trainOptionsOf, type JobCommon, type JobOutput, type JobResult } from "./jobCommon.js";

export type LanguageModelRecipe = "from-scratch" | "warm-start" | "lora";

/** A language-model job, resolved: every field a run records. */
export interface LanguageModelJob extends JobCommon {
  recipe: LanguageModelRecipe;
  /** from-scratch: the model shape, a name of SCRATCH_CONFIGS. */
  config?: string;
  /** warm-start, lora: the GGUF to start from (a path or a model name). */
  model?: string;
  /** The data: a text or pre-tokenized ids (default for from-scratch: the shipped corpus). */
  data?: string;
  /** How `data` is read (default: by extension, .bin/.u16 → u16, .u32 → u32, else text). */
  dataFormat?: DataFormat;
  /** A JSON file of T+1 token ids: the one batch of every step (instead of `data`). */
  ids?: string;
  /** Tokens per sequence (not with `ids`). */
  seq: number;
  /** Micro-batches per step (gradient accumulation). */
  accum: number;
  /** lora: adapter rank, scale numerator (W' = W + alpha/rank · B A), matrices to adapt. */
  rank?: number;
  alpha?: number;
  targets?: string[];
  /** lora: also write base + adapter merged as weights/merged.gguf. */
  merge?: boolean;
}

/** What a caller gives: the recipe, and whatever it sets (the rest takes the recipe's defaults). */
export type LanguageModelJobOptions = Partial<LanguageModelJob> & { recipe: LanguageModelRecipe };

/** Each recipe's run length, batch shape, learning rate and when it validates and checkpoints. */
export interface RecipeDefaults { steps: number; batch: number; seq: number; lr: number; warmup: number; evalEvery: number; saveEvery: number }

export const LANGUAGE_MODEL_DEFAULTS: Record<LanguageModelRecipe, RecipeDefaults> = {
  // small (d 128, 4 layers) on the cpu backend: 600 steps of 8 × 128 tokens, ~30 s on 2 cores.
  "from-scratch": { steps: 600, batch: 8, seq: 128, lr: 3e-3, warmup: 20, evalEvery: 100, saveEvery: 200 },
  // A pretrained model: the recipes' own learning rates and warmup (src/recipes, docs/cli.md).
  "warm-start": { steps: DEFAULT_TRAIN_OPTIONS.steps, batch: 4, seq: 64, ...warmStart.defaults, evalEvery: 0, saveEvery: 0 },
  lora: { steps: DEFAULT_TRAIN_OPTIONS.steps, batch: 4, seq: 64, ...lora.defaults, evalEvery: 0, saveEvery: 0 },
};

/** from-scratch's model shape when the job names none (sized for the cpu backend). */
export const DEFAULT_JOB_SCRATCH_CONFIG = "small";

/** lora's adapter when the job does not say: rank 8, alpha 16, on attn_q and attn_v. */
export const LORA_JOB_DEFAULTS = { rank: 8, alpha: 16, targets: [...DEFAULT_LORA_TARGETS] } as const;

/** A job with every option the caller left out filled in from the recipe's defaults. */
export function languageModelJob(options: LanguageModelJobOptions): LanguageModelJob {
  const d = DEFAULT_TRAIN_OPTIONS, r = LANGUAGE_MODEL_DEFAULTS[options.recipe];
  if (!r) throw new UsageError(`recipe ${options.recipe}: unknown (known: ${Object.keys(LANGUAGE_MODEL_DEFAULTS).join(", ")})`);
  const defaults: LanguageModelJob = {
    recipe: options.recipe, ...r,
    betas: d.betas, eps: d.eps, weightDecay: d.weightDecay, schedule: d.schedule, clip: d.clip, accum: d.accum, seed: d.seed,
    out: DEFAULT_RUNS_DIR,
    ...(options.recipe === "from-scratch" ? { config: DEFAULT_JOB_SCRATCH_CONFIG } : {}),
    ...(options.recipe === "lora" ? { rank: LORA_JOB_DEFAULTS.rank, alpha: LORA_JOB_DEFAULTS.alpha, targets: [...LORA_JOB_DEFAULTS.targets] } : {}),
  };
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  return { ...defaults, ...given };
}

/** What a checkpoint records to rebuild a language-model run (state.json "run"). */
export interface LanguageModelSpec {
  recipe: LanguageModelRecipe;
  flags: LanguageModelJob;
  /** The resolved model file (warm-start, lora) and data file, and the data's format. */
  modelPath?: string;
  dataPath?: string;
  dataFormat?: DataFormat;
}

/** The batch of an ids file: input = all but the last id, target = all but the first. */
export function idsBatch(path: string, nVocab: number): Batch {
  let ids: unknown;
  try { ids = JSON.parse(readFileSync(path, "utf8")); } catch (e) { throw new UsageError(`--ids ${path}: cannot read a JSON array (${(e as Error).message})`); }
  if (!Array.isArray(ids) || ids.length < 2 || ids.some((x) => !Number.isInteger(x) || x < 0 || x >= nVocab)) {
    throw new UsageError(`--ids ${path}: expected a JSON array of at least 2 token ids in 0..${nVocab - 1}`);
  }
  const T = ids.length - 1;
  return { input: Int32Array.from(ids.slice(0, T)), target: Int32Array.from(ids.slice(1)), batch: 1, seq: T };
}

/**
 * Train a language model as `toy train from-scratch | warm-start | lora` does: realize the
 * recipe, load the data, make the run bundle OUT/<id>/ and run the loop to the end. Options left
 * out take the recipe's defaults (LANGUAGE_MODEL_DEFAULTS). The options' errors are UsageErrors.
 */
export async function trainLanguageModel(options: LanguageModelJobOptions, output: JobOutput = {}): Promise<JobResult> {
  const job = languageModelJob(options);
  const { recipe } = job;
  if (job.ids !== undefined && job.data !== undefined) throw new UsageError("give at most one of --ids FILE or --data FILE");
  if (job.dataFormat !== undefined && job.data === undefined) throw new UsageError("--data-format says how --data FILE is read; give --data FILE too");
  if (recipe !== "from-scratch" && job.ids === undefined && job.data === undefined) throw new UsageError(`toy train ${recipe} needs --ids FILE or --data FILE`);
  if (recipe !== "from-scratch" && !job.model) throw new UsageError(`toy train ${recipe} needs --model PATH`);
  if (recipe === "from-scratch" && !SCRATCH_CONFIGS[job.config ?? DEFAULT_SCRATCH_CONFIG]) {
    throw new UsageError(`--config ${job.config}: unknown (known: ${Object.keys(SCRATCH_CONFIGS).join(", ")})`);
  }
  const spec: LanguageModelSpec = {
    recipe, flags: job,
    modelPath: job.model ? resolve(resolveModelPath(job.model)) : undefined,
    dataPath: job.ids !== undefined ? undefined : resolve(job.data ?? defaultCorpusPath()),
  };
  if (job.ids !== undefined) { job.ids = resolve(job.ids); idsBatch(job.ids, Infinity); } // a bad ids file fails before a bundle exists
  const label = recipe === "from-scratch" ? `scratch-${job.config ?? DEFAULT_SCRATCH_CONFIG}` : `${recipe}-${spec.modelPath!.replace(/^.*[\\/]/, "").replace(/\.gguf$/i, "")}`;
  // The bundle is made once the model and data have loaded, so a bad data file leaves no empty run.
  return runLanguageModel(spec, () => RunBundle.create(job.out, label), undefined, output);
}

/** Build the model of a run: fresh, or from a checkpoint's weights. */
function realize(spec: LanguageModelSpec, backend: Device, ckpt?: Checkpoint): RealizedRun {
  const job = spec.flags;
  const options = { ...trainOptionsOf(job, job.accum), backend };
  if (spec.recipe === "lora") {
    return lora.realize(spec.modelPath!, { ...options, rank: job.rank!, alpha: job.alpha!, targets: job.targets!, adapter: ckpt?.ggufPath });
  }
  if (ckpt) return warmStart.realize(ckpt.ggufPath, options);
  if (spec.recipe === "from-scratch") return fromScratch.realize(job.config ?? DEFAULT_SCRATCH_CONFIG, options);
  return warmStart.realize(spec.modelPath!, options);
}

/** A pre-tokenized file is memory-mapped when the native addon is there to map it. */
function fileMapper() {
  const cpu = cpuBackend();
  return "error" in cpu ? undefined : cpu.mapFile;
}

/** Run (or, from `ckpt`, continue) the language-model run a spec describes. */
export async function runLanguageModel(spec: LanguageModelSpec, openBundle: () => RunBundle, ckpt: Checkpoint | undefined, output: JobOutput): Promise<JobResult> {
  const job = spec.flags;
  await prepareBackend(job.backend);
  const backend = selectBackend(job.backend, { threads: job.threads });
  const run = realize(spec, backend, ckpt);
  const rng = new Rng(job.seed);
  let nextBatch: () => Batch;
  let validation: Batch | null = null;
  if (job.ids !== undefined) {
    const batch = idsBatch(job.ids, run.config.nVocab);
    nextBatch = () => batch;
  } else {
    // Resolved once and saved with the run, so a resume reads the file the same way.
    spec.dataFormat ??= dataFormatOf(spec.dataPath!, job.dataFormat, run.config.nVocab);
    const encode = (text: string) => tokenizerFromMetadata(run.source.metadata, spec.modelPath ?? "<from-scratch>").encode(text);
    const all = corpusTokens(spec.dataPath!, spec.dataFormat, run.config.nVocab, encode, fileMapper());
    ({ nextBatch, validation } = trainingData(all, spec.dataPath!, job, rng));
  }
  if (ckpt) rng.state = ckpt.state.rng;
  const bundle = openBundle();
  await runLoop({
    run, bundle, ckpt, flags: job, options: trainOptionsOf(job, job.accum), backend, unit: "tokens",
    start: {
      recipe: spec.recipe, model: spec.modelPath ?? `${job.config ?? DEFAULT_SCRATCH_CONFIG} (from scratch)`,
      data: job.ids ?? spec.dataPath, ...(spec.dataFormat ? { data_format: spec.dataFormat } : {}), config: run.config,
      ...(spec.recipe === "lora" ? { lora: { rank: job.rank, alpha: job.alpha, targets: job.targets } } : {}),
    },
    nextBatch: () => Array.from({ length: job.accum }, nextBatch),
    samplerState: () => rng.state,
    evaluate: validation && (() => {
      const loss = run.trainer.evaluate(validation);
      return { fields: { val_loss: loss }, text: `validation loss ${loss.toFixed(4)}` };
    }),
    saveInitial: spec.recipe === "from-scratch",
    finalName: spec.recipe === "lora" ? "adapter.gguf" : "final.gguf",
    afterFinal: (log) => {
      if (spec.recipe !== "lora" || !job.merge) return;
      const merged = join(bundle.weights, "merged.gguf");
      (run as ReturnType<typeof lora.realize>).saveMerged(merged);
      log.emit({ event: "checkpoint", step: job.steps, path: merged, merged: true });
    },
    spec: spec as unknown as Record<string, unknown>,
  }, output);
  return { bundle, stepsRun: job.steps - (ckpt?.state.step ?? 0), steps: job.steps };
}
