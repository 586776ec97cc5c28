// toy train warm-start: continue training a GGUF's weights with AdamW, writing a run bundle
// DIR/<id>/ (events.jsonl, weights/final.gguf and periodic checkpoints). --ids FILE trains on
// one fixed batch (a JSON array of T+1 ids: input = all but the last, target = all but the
// first), for checking against other frameworks; --data FILE samples seeded random windows of
// a text file tokenized with the model's tokenizer.

import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { ToyError, UsageError } from "../../errors.js";
import { Rng } from "../../engines/rng.js";
import { DEFAULT_TRAIN_OPTIONS, type TrainOptions } from "../../engines/train.js";
import type { Batch } from "../../engines/trainForward.js";
import { EventLog } from "../../engines/trainEvents.js";
import { tokenizerFromMetadata } from "../../io/tokenizer/index.js";
import { warmStart } from "../../recipes/warmStart.js";
import { float, int } from "../common.js";
import { resolveModelPath } from "../modelNames.js";

interface TrainFlags {
  model?: string;
  data?: string;
  ids?: string;
  steps: number;
  batch: number;
  seq: number;
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  schedule: "constant" | "cosine";
  warmup: number;
  clip: number;
  accum: number;
  seed: number;
  evalEvery: number;
  saveEvery: number;
  out: string;
  json?: boolean;
}

function betas(value: string): [number, number] {
  const b = value.split(",").map(Number);
  if (b.length !== 2 || b.some((x) => !(x >= 0 && x < 1))) throw new InvalidArgumentError(`--betas must be two numbers in [0, 1) like 0.9,0.95, got "${value}"`);
  return [b[0], b[1]];
}

function trainingFlags(cmd: Command): Command {
  const d = DEFAULT_TRAIN_OPTIONS;
  return cmd
    .option("--model <path>", "the GGUF model to start from (a path or a model name)")
    .option("--data <file>", "a text file to train on (tokenized with the model's tokenizer)")
    .option("--ids <file>", "a JSON array of T+1 token ids: the one batch of every step")
    .option("--steps <n>", "optimizer steps", int("--steps", 1), d.steps)
    .option("--batch <n>", "sequences per micro-batch (with --data)", int("--batch", 1), 4)
    .option("--seq <n>", "tokens per sequence (with --data)", int("--seq", 1), 64)
    .option("--lr <x>", "peak learning rate", float("--lr", 0), d.lr)
    .option("--betas <b1,b2>", "AdamW betas", betas, d.betas)
    .option("--eps <x>", "AdamW epsilon", float("--eps", 0), d.eps)
    .option("--weight-decay <x>", "decoupled weight decay (tensors with 2+ dims)", float("--weight-decay", 0), d.weightDecay)
    .addOption(new Option("--schedule <kind>", "learning-rate schedule").choices(["constant", "cosine"]).default(d.schedule))
    .option("--warmup <n>", "linear warmup steps", int("--warmup", 0), d.warmup)
    .option("--clip <x>", "global gradient-norm clipping (0: off)", float("--clip", 0), d.clip)
    .option("--accum <n>", "micro-batches per step (gradient accumulation)", int("--accum", 1), d.accum)
    .option("--seed <n>", "random seed (data windows)", int("--seed", 0), d.seed)
    .option("--eval-every <n>", "validation loss every n steps (with --data; 0: start and end only)", int("--eval-every", 0), 0)
    .option("--save-every <n>", "write a checkpoint every n steps (0: only the final one)", int("--save-every", 0), 0)
    .option("--out <dir>", "folder of run bundles (the bundle is DIR/<id>/)", "runs")
    .option("--json", "print the toy/v1 events as JSON lines");
}

export function trainCommand(): Command {
  const cmd = new Command("train").description("train a model: warm-start from a GGUF (from-scratch and lora: not yet)");
  const warm = trainingFlags(new Command("warm-start").description("load a GGUF and continue training all of its weights"));
  warm.action((flags: TrainFlags) => runWarmStart(flags));
  cmd.addCommand(warm.exitOverride().showHelpAfterError());
  return cmd;
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

/** Seeded random windows of a token stream: B rows of T inputs and their next tokens. */
function windowBatch(tokens: Int32Array, B: number, T: number, rng: Rng): Batch {
  const input = new Int32Array(B * T), target = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const start = Math.floor(rng.next() * (tokens.length - T));
    input.set(tokens.subarray(start, start + T), b * T);
    target.set(tokens.subarray(start + 1, start + T + 1), b * T);
  }
  return { input, target, batch: B, seq: T };
}

function newRunDir(out: string, model: string): { id: string; dir: string } {
  const base = `${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${basename(model).replace(/\.gguf$/i, "")}`;
  let id = base;
  for (let n = 2; existsSync(join(out, id)); n++) id = `${base}-${n}`;
  const dir = join(out, id);
  mkdirSync(join(dir, "weights"), { recursive: true });
  return { id, dir };
}

function toyVersion(): string {
  return (JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

function runWarmStart(flags: TrainFlags): void {
  if (!flags.model) throw new UsageError("toy train warm-start needs --model PATH");
  if ((flags.ids === undefined) === (flags.data === undefined)) throw new UsageError("give exactly one of --ids FILE or --data FILE");
  const modelPath = resolveModelPath(flags.model);
  const options: TrainOptions = {
    steps: flags.steps, lr: flags.lr, betas: flags.betas, eps: flags.eps, weightDecay: flags.weightDecay,
    schedule: flags.schedule, warmup: flags.warmup, clip: flags.clip, accum: flags.accum, seed: flags.seed,
  };
  const run = warmStart.realize(modelPath, options);
  const rng = new Rng(flags.seed);
  let nextBatch: () => Batch;
  let validation: Batch | null = null;
  if (flags.ids !== undefined) {
    const batch = idsBatch(flags.ids, run.config.nVocab);
    nextBatch = () => batch;
  } else {
    let text: string;
    try { text = readFileSync(flags.data!, "utf8"); } catch (e) { throw new ToyError(`${flags.data}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
    const all = Int32Array.from(tokenizerFromMetadata(run.source.metadata, modelPath).encode(text));
    const split = Math.floor(all.length * 0.9);
    const train = all.subarray(0, split), val = all.subarray(split);
    if (train.length <= flags.seq + 1) throw new UsageError(`--data ${flags.data}: ${all.length} tokens is too few for --seq ${flags.seq}`);
    nextBatch = () => windowBatch(train, flags.batch, flags.seq, rng);
    if (val.length > flags.seq + 1) validation = windowBatch(val, flags.batch, flags.seq, new Rng(flags.seed + 1));
  }

  const { id, dir } = newRunDir(flags.out, modelPath);
  const log = new EventLog(join(dir, "events.jsonl"), flags.json ? (line) => process.stdout.write(line + "\n") : undefined);
  const say = (line: string) => { if (!flags.json) process.stderr.write(line + "\n"); };
  log.emit({
    event: "run_start", run_id: id, recipe: warmStart.name, model: modelPath, config: run.config,
    options, seed: flags.seed, backend: "ts", versions: { toy: toyVersion(), node: process.versions.node },
  });
  const evaluate = (step: number) => {
    if (!validation) return;
    const loss = run.trainer.evaluate(validation);
    log.emit({ event: "eval", step, val_loss: loss });
    say(`step ${step}  validation loss ${loss.toFixed(4)}`);
  };
  const save = (step: number, name: string) => {
    const path = join(dir, "weights", name);
    run.save(path);
    log.emit({ event: "checkpoint", step, path });
  };
  const started = performance.now();
  evaluate(0);
  let last = NaN;
  for (let s = 0; s < flags.steps; s++) {
    const r = run.step(Array.from({ length: flags.accum }, nextBatch));
    last = r.loss;
    log.emit({ event: "step", step: r.step, loss: r.loss, lr: r.lr, grad_norm: r.gradNorm, tokens: r.tokens, tokens_per_s: r.tokens / r.seconds });
    say(`step ${r.step + 1}/${flags.steps}  loss ${r.loss.toFixed(4)}  lr ${r.lr.toExponential(2)}  |g| ${r.gradNorm.toFixed(3)}  ${(r.tokens / r.seconds).toFixed(0)} tok/s`);
    if (flags.evalEvery > 0 && (s + 1) % flags.evalEvery === 0 && s + 1 < flags.steps) evaluate(s + 1);
    if (flags.saveEvery > 0 && (s + 1) % flags.saveEvery === 0 && s + 1 < flags.steps) save(s + 1, `step-${s + 1}.gguf`);
  }
  evaluate(flags.steps);
  save(flags.steps, "final.gguf");
  log.emit({ event: "run_end", run_id: id, steps: flags.steps, final_loss: last, seconds: (performance.now() - started) / 1000 });
  say(`run bundle: ${dir}`);
}
