// toy train from-scratch | warm-start | lora | vit (./trainVit.ts), and toy train --resume runs/<id>.
// Every run writes a bundle DIR/<id>/ (io/runs/bundle.ts): events.jsonl (toy/v1), loss.svg,
// weights/step-N.gguf checkpoints with their optimizer and random state, and weights/final.gguf.
// Data: --ids FILE trains on one fixed batch (a JSON array of T+1 ids: input = all but the last,
// target = all but the first), for checking against other frameworks; otherwise seeded random
// windows of --data FILE (default: the corpus shipped in assets/corpus): a text tokenized with the
// model's tokenizer, or pre-tokenized uint16/uint32 ids (io/runs/corpus.ts says which), the last
// 10% held out for the validation loss (io/runs/windows.ts).

import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { ToyError, UsageError } from "../../errors.js";
import { Rng } from "../../data/rng.js";
import { DEFAULT_TRAIN_OPTIONS, type TrainOptions } from "../../train/trainer.js";
import type { Batch } from "../../data/batch.js";
import { tokenizerFromMetadata } from "../../io/tokenizer/index.js";
import { RunBundle, type Checkpoint } from "../../io/runs/bundle.js";
import { corpusTokens, DATA_FORMATS, dataFormatOf, defaultCorpusPath, type DataFormat } from "../../io/runs/corpus.js";
import { trainingData } from "../../io/runs/windows.js";
import { DEFAULT_SCRATCH_CONFIG, fromScratch, SCRATCH_CONFIGS } from "../../recipes/fromScratch.js";
import { DEFAULT_LORA_TARGETS, lora } from "../../recipes/lora.js";
import { warmStart, type RealizedRun } from "../../recipes/warmStart.js";
import { float, int } from "../common.js";
import { runLoop } from "../../train/loop.js";
import { loopOutput, optimizerFlags, type CommonTrainFlags } from "./trainFlags.js";
import { trainVit, vitCommand, type VitSpec } from "./trainVit.js";
import { cpuBackend, selectBackend, type Device } from "../../backends/index.js";
import { backendOptions } from "./options.js";
import { resolveModelPath } from "../../io/discovery/modelNames.js";

type Recipe = "from-scratch" | "warm-start" | "lora";

interface TrainFlags extends CommonTrainFlags {
  model?: string;
  config?: string;
  data?: string;
  dataFormat?: DataFormat;
  ids?: string;
  seq: number;
  accum: number;
  rank?: number;
  alpha?: number;
  targets?: string[];
  merge?: boolean;
}

/** What a checkpoint records to rebuild its run (state.json "run"). */
interface RunSpec {
  recipe: Recipe;
  flags: TrainFlags;
  /** The resolved model file (warm-start, lora) and data file, and the data's format. */
  modelPath?: string;
  dataPath?: string;
  dataFormat?: DataFormat;
}

function targetList(value: string): string[] {
  const t = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (t.length === 0) throw new InvalidArgumentError(`--targets must be a comma-separated list like attn_q,attn_v, got "${value}"`);
  return t;
}

interface Defaults { steps: number; batch: number; seq: number; lr: number; warmup: number; evalEvery: number; saveEvery: number }

const RECIPE_DEFAULTS: Record<Recipe, Defaults> = {
  // small (d 128, 4 layers) on the cpu backend: 600 steps of 8 × 128 tokens, ~30 s on 2 cores.
  "from-scratch": { steps: 600, batch: 8, seq: 128, lr: 3e-3, warmup: 20, evalEvery: 100, saveEvery: 200 },
  // A pretrained model: the recipes' own learning rates and warmup (src/recipes, docs/cli.md).
  "warm-start": { steps: DEFAULT_TRAIN_OPTIONS.steps, batch: 4, seq: 64, ...warmStart.defaults, evalEvery: 0, saveEvery: 0 },
  lora: { steps: DEFAULT_TRAIN_OPTIONS.steps, batch: 4, seq: 64, ...lora.defaults, evalEvery: 0, saveEvery: 0 },
};

/** from-scratch's model when --config is not given, on the cpu backend. */
const SCRATCH_CLI_CONFIG = "small";

/** On the ts reference backend (no native build) the cpu-sized default run would take hours, so
 *  the flags left at their defaults take these instead: tiny, ~300 tokens/s, 2–3 minutes. */
const SCRATCH_TS_DEFAULTS: Partial<TrainFlags> = { config: DEFAULT_SCRATCH_CONFIG, steps: 250, batch: 4, seq: 64, warmup: 10, evalEvery: 50, saveEvery: 50 };

function trainingFlags(cmd: Command, recipe: Recipe): Command {
  const d = DEFAULT_TRAIN_OPTIONS, r = RECIPE_DEFAULTS[recipe];
  if (recipe === "from-scratch") {
    cmd.option("--config <name>", `the model shape (${Object.keys(SCRATCH_CONFIGS).join(", ")}); on the ts backend the flags left at their defaults are ${Object.entries(SCRATCH_TS_DEFAULTS).map(([k, v]) => `--${k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())} ${v}`).join(", ")}`, SCRATCH_CLI_CONFIG);
  } else {
    cmd.option("--model <path>", "the GGUF model to start from (a path or a model name)");
  }
  cmd
    .option("--data <file>", `the data to train on: a text (tokenized with the model's tokenizer) or pre-tokenized ids (see --data-format)${recipe === "from-scratch" ? "; default: the corpus shipped with toy" : ""}`)
    .addOption(new Option("--data-format <format>", "how --data is read: text, or little-endian uint16/uint32 token ids (default: by extension, .bin/.u16 → u16, .u32 → u32, else text)").choices([...DATA_FORMATS]))
    .option("--ids <file>", "a JSON array of T+1 token ids: the one batch of every step")
    .option("--steps <n>", "optimizer steps", int("--steps", 1), r.steps)
    .option("--batch <n>", "sequences per micro-batch (not with --ids)", int("--batch", 1), r.batch)
    .option("--seq <n>", "tokens per sequence (not with --ids)", int("--seq", 1), r.seq);
  optimizerFlags(cmd, { ...r, weightDecay: d.weightDecay })
    .option("--accum <n>", "micro-batches per step (gradient accumulation)", int("--accum", 1), d.accum)
    .option("--seed <n>", "random seed (initial weights, data windows)", int("--seed", 0), d.seed)
    .option("--eval-every <n>", "validation loss every n steps (not with --ids; 0: start and end only)", int("--eval-every", 0), r.evalEvery)
    .option("--save-every <n>", "write a checkpoint every n steps (0: only the final one)", int("--save-every", 0), r.saveEvery)
    .option("--out <dir>", "folder of run bundles (the bundle is DIR/<id>/)", "runs");
  if (recipe === "lora") {
    cmd
      .option("--rank <r>", "adapter rank", int("--rank", 1), 8)
      .option("--alpha <a>", "adapter scale numerator (W' = W + alpha/rank · B A)", float("--alpha", 0), 16)
      .option("--targets <list>", "the matrices to adapt, by GGUF name without blk.N. and .weight", targetList, [...DEFAULT_LORA_TARGETS])
      .option("--merge", "also write the merged model (base + adapter) as weights/merged.gguf");
  }
  backendOptions(cmd);
  return cmd.option("--json", "print the toy/v1 events as JSON lines (no progress bar)");
}

export function trainCommand(): Command {
  const cmd = new Command("train")
    .description("train a model: from-scratch (random init), warm-start (continue a GGUF), lora (adapters on a frozen GGUF) or vit (an image classifier); --resume continues a run")
    .option("--resume <run>", "continue the run bundle runs/<id> from its last complete checkpoint")
    .action((flags: { resume?: string }) => {
      if (!flags.resume) throw new UsageError("toy train needs a recipe (from-scratch, warm-start, lora, vit) or --resume runs/<id>; see toy train --help");
      return resumeRun(flags.resume);
    });
  const recipes: [Recipe, string][] = [
    ["from-scratch", "a llama model with seeded random weights over a byte vocabulary (no arguments needed)"],
    ["warm-start", "load a GGUF and continue training all of its weights"],
    ["lora", "train low-rank adapters on a frozen GGUF; saves a llama.cpp LoRA adapter"],
  ];
  for (const [recipe, description] of recipes) {
    const sub = trainingFlags(new Command(recipe).description(description), recipe);
    sub.action((flags: TrainFlags, command: Command) => {
      if (recipe === "from-scratch") scratchDefaultsForBackend(flags, command);
      return startRun(recipe, flags);
    });
    cmd.addCommand(sub.exitOverride().showHelpAfterError());
  }
  cmd.addCommand(vitCommand().exitOverride().showHelpAfterError());
  return cmd;
}

/** from-scratch on the ts backend: the flags the user left at their defaults take the ts-sized ones. */
function scratchDefaultsForBackend(flags: TrainFlags, command: Command): void {
  if (selectBackend(flags.backend, { threads: flags.threads }) !== "ts") return;
  for (const [key, value] of Object.entries(SCRATCH_TS_DEFAULTS)) {
    if (command.getOptionValueSource(key) === "default") (flags as unknown as Record<string, unknown>)[key] = value;
  }
}

/** The batch of --ids FILE: input = all but the last id, target = all but the first. */
export function idsBatch(path: string, nVocab: number): Batch {
  let ids: unknown;
  try { ids = JSON.parse(readFileSync(path, "utf8")); } catch (e) { throw new UsageError(`--ids ${path}: cannot read a JSON array (${(e as Error).message})`); }
  if (!Array.isArray(ids) || ids.length < 2 || ids.some((x) => !Number.isInteger(x) || x < 0 || x >= nVocab)) {
    throw new UsageError(`--ids ${path}: expected a JSON array of at least 2 token ids in 0..${nVocab - 1}`);
  }
  const T = ids.length - 1;
  return { input: Int32Array.from(ids.slice(0, T)), target: Int32Array.from(ids.slice(1)), batch: 1, seq: T };
}

function optionsOf(f: TrainFlags): TrainOptions {
  return {
    steps: f.steps, lr: f.lr, betas: f.betas, eps: f.eps, weightDecay: f.weightDecay,
    schedule: f.schedule, warmup: f.warmup, clip: f.clip, accum: f.accum, seed: f.seed,
  };
}

/** Build the model of a run: fresh, or from a checkpoint's weights. */
function realize(spec: RunSpec, backend: Device, ckpt?: Checkpoint): RealizedRun {
  const options = { ...optionsOf(spec.flags), backend };
  if (spec.recipe === "lora") {
    return lora.realize(spec.modelPath!, { ...options, rank: spec.flags.rank!, alpha: spec.flags.alpha!, targets: spec.flags.targets!, adapter: ckpt?.ggufPath });
  }
  if (ckpt) return warmStart.realize(ckpt.ggufPath, options);
  if (spec.recipe === "from-scratch") return fromScratch.realize(spec.flags.config ?? DEFAULT_SCRATCH_CONFIG, options);
  return warmStart.realize(spec.modelPath!, options);
}

function startRun(recipe: Recipe, flags: TrainFlags): Promise<void> {
  if (flags.ids !== undefined && flags.data !== undefined) throw new UsageError("give at most one of --ids FILE or --data FILE");
  if (flags.dataFormat !== undefined && flags.data === undefined) throw new UsageError("--data-format says how --data FILE is read; give --data FILE too");
  if (recipe !== "from-scratch" && flags.ids === undefined && flags.data === undefined) throw new UsageError(`toy train ${recipe} needs --ids FILE or --data FILE`);
  if (recipe !== "from-scratch" && !flags.model) throw new UsageError(`toy train ${recipe} needs --model PATH`);
  if (recipe === "from-scratch" && !SCRATCH_CONFIGS[flags.config ?? DEFAULT_SCRATCH_CONFIG]) {
    throw new UsageError(`--config ${flags.config}: unknown (known: ${Object.keys(SCRATCH_CONFIGS).join(", ")})`);
  }
  const spec: RunSpec = {
    recipe, flags,
    modelPath: flags.model ? resolve(resolveModelPath(flags.model)) : undefined,
    dataPath: flags.ids !== undefined ? undefined : resolve(flags.data ?? defaultCorpusPath()),
  };
  if (flags.ids !== undefined) { flags.ids = resolve(flags.ids); idsBatch(flags.ids, Infinity); } // a bad --ids fails before a bundle exists
  const label = recipe === "from-scratch" ? `scratch-${flags.config ?? DEFAULT_SCRATCH_CONFIG}` : `${recipe}-${spec.modelPath!.replace(/^.*[\\/]/, "").replace(/\.gguf$/i, "")}`;
  // The bundle is made once the model and data have loaded, so a bad --data leaves no empty run.
  return train(spec, () => RunBundle.create(flags.out, label));
}

function resumeRun(dir: string): Promise<void> {
  if (!existsSync(dir)) throw new UsageError(`--resume ${dir}: no such run folder`);
  const bundle = new RunBundle(dir);
  const ckpt = bundle.latest();
  if (!ckpt) throw new ToyError(`--resume ${dir}: no complete checkpoint in ${bundle.weights}`);
  if (ckpt.state.gguf === "final.gguf" || ckpt.state.gguf === "adapter.gguf") {
    process.stderr.write(`${dir}: the run is already complete (${ckpt.state.step} steps)\n`);
    return Promise.resolve();
  }
  const spec = ckpt.state.run as unknown as RunSpec | VitSpec;
  if (spec.recipe === "vit") return trainVit(spec, () => bundle, ckpt);
  return train(spec, () => bundle, ckpt);
}

/** A pre-tokenized file is memory-mapped when the native addon is there to map it. */
function fileMapper() {
  const cpu = cpuBackend();
  return "error" in cpu ? undefined : cpu.mapFile;
}

async function train(spec: RunSpec, openBundle: () => RunBundle, ckpt?: Checkpoint): Promise<void> {
  const { flags } = spec;
  const backend = selectBackend(flags.backend, { threads: flags.threads });
  const run = realize(spec, backend, ckpt);
  const rng = new Rng(flags.seed);
  let nextBatch: () => Batch;
  let validation: Batch | null = null;
  if (flags.ids !== undefined) {
    const batch = idsBatch(flags.ids, run.config.nVocab);
    nextBatch = () => batch;
  } else {
    // Resolved once and saved with the run, so --resume reads the file the same way.
    spec.dataFormat ??= dataFormatOf(spec.dataPath!, flags.dataFormat, run.config.nVocab);
    const encode = (text: string) => tokenizerFromMetadata(run.source.metadata, spec.modelPath ?? "<from-scratch>").encode(text);
    const all = corpusTokens(spec.dataPath!, spec.dataFormat, run.config.nVocab, encode, fileMapper());
    ({ nextBatch, validation } = trainingData(all, spec.dataPath!, flags, rng));
  }
  if (ckpt) rng.state = ckpt.state.rng;
  const bundle = openBundle();
  return runLoop({
    run, bundle, ckpt, flags, options: optionsOf(flags), backend, unit: "tokens",
    start: {
      recipe: spec.recipe, model: spec.modelPath ?? `${flags.config ?? DEFAULT_SCRATCH_CONFIG} (from scratch)`,
      data: flags.ids ?? spec.dataPath, ...(spec.dataFormat ? { data_format: spec.dataFormat } : {}), config: run.config,
      ...(spec.recipe === "lora" ? { lora: { rank: flags.rank, alpha: flags.alpha, targets: flags.targets } } : {}),
    },
    nextBatch: () => Array.from({ length: flags.accum }, nextBatch),
    samplerState: () => rng.state,
    evaluate: validation && (() => {
      const loss = run.trainer.evaluate(validation);
      return { fields: { val_loss: loss }, text: `validation loss ${loss.toFixed(4)}` };
    }),
    saveInitial: spec.recipe === "from-scratch",
    finalName: spec.recipe === "lora" ? "adapter.gguf" : "final.gguf",
    afterFinal: (log) => {
      if (spec.recipe !== "lora" || !flags.merge) return;
      const merged = join(bundle.weights, "merged.gguf");
      (run as ReturnType<typeof lora.realize>).saveMerged(merged);
      log.emit({ event: "checkpoint", step: flags.steps, path: merged, merged: true });
    },
    spec: spec as unknown as Record<string, unknown>,
  }, loopOutput(flags.json, "tokens"));
}
