// toy train from-scratch | warm-start | lora | vit (./trainVit.ts), and toy train --resume runs/<id>:
// flags → a job's options → the library's trainLanguageModel / resumeTraining
// (src/recipes/languageModelJob.ts, resumeJob.ts, which say what a run does and writes) → the
// loop's output on the command line (./trainFlags.ts).

import { Command, InvalidArgumentError, Option } from "commander";
import { UsageError } from "../../errors.js";
import { DEFAULT_TRAIN_OPTIONS } from "../../train/trainer.js";
import { DATA_FORMATS } from "../../io/runs/corpus.js";
import { DEFAULT_SCRATCH_CONFIG, SCRATCH_CONFIGS } from "../../recipes/fromScratch.js";
import { DEFAULT_JOB_SCRATCH_CONFIG, LANGUAGE_MODEL_DEFAULTS, LORA_JOB_DEFAULTS, trainLanguageModel, type LanguageModelJob, type LanguageModelRecipe } from "../../recipes/languageModelJob.js";
import { resumeTraining } from "../../recipes/resumeJob.js";
import { DEFAULT_RUNS_DIR } from "../../recipes/jobCommon.js";
import { float, int } from "../common.js";
import { loopOutput, optimizerFlags, type CommonTrainFlags } from "./trainFlags.js";
import { vitCommand } from "./trainVit.js";
import { selectBackend } from "../../backends/index.js";
import { backendOptions } from "./options.js";

type Recipe = LanguageModelRecipe;

/** The flags of the job's own options (commander names them as the job does), and --config. */
interface TrainFlags extends CommonTrainFlags,
  Pick<LanguageModelJob, "model" | "data" | "dataFormat" | "ids" | "seq" | "accum" | "rank" | "alpha" | "targets" | "merge"> {
  config?: string;
}

function targetList(value: string): string[] {
  const t = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (t.length === 0) throw new InvalidArgumentError(`--targets must be a comma-separated list like attn_q,attn_v, got "${value}"`);
  return t;
}

const RECIPE_DEFAULTS = LANGUAGE_MODEL_DEFAULTS;

/** from-scratch's model when --config is not given, on the cpu backend. */
const SCRATCH_CLI_CONFIG = DEFAULT_JOB_SCRATCH_CONFIG;

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
    .option("--out <dir>", "folder of run bundles (the bundle is DIR/<id>/)", DEFAULT_RUNS_DIR);
  if (recipe === "lora") {
    cmd
      .option("--rank <r>", "adapter rank", int("--rank", 1), LORA_JOB_DEFAULTS.rank)
      .option("--alpha <a>", "adapter scale numerator (W' = W + alpha/rank · B A)", float("--alpha", 0), LORA_JOB_DEFAULTS.alpha)
      .option("--targets <list>", "the matrices to adapt, by GGUF name without blk.N. and .weight", targetList, [...LORA_JOB_DEFAULTS.targets])
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
      return trainLanguageModel({ ...flags, recipe }, loopOutput(flags.json, "tokens")).then(() => undefined);
    });
    cmd.addCommand(sub.exitOverride().showHelpAfterError());
  }
  cmd.addCommand(vitCommand().exitOverride().showHelpAfterError());
  return cmd;
}

/** from-scratch on the ts backend: the flags the user left at their defaults take the ts-sized ones. */
function scratchDefaultsForBackend(flags: TrainFlags, command: Command): void {
  if (flags.backend === "webgpu" || selectBackend(flags.backend, { threads: flags.threads }) !== "ts") return;
  for (const [key, value] of Object.entries(SCRATCH_TS_DEFAULTS)) {
    if (command.getOptionValueSource(key) === "default") (flags as unknown as Record<string, unknown>)[key] = value;
  }
}

/** Continue a run; one that already finished is left as it is, with a line that says so. */
async function resumeRun(dir: string): Promise<void> {
  const r = await resumeTraining(dir, (job) => loopOutput((job.flags as { json?: boolean }).json, job.recipe === "vit" ? "images" : "tokens"));
  if (r.stepsRun === 0) process.stderr.write(`${dir}: the run is already complete (${r.steps} steps)\n`);
}
