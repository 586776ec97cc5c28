// The loop every `toy train` recipe runs: the events (toy/v1) of a run bundle, a progress bar on
// a terminal, validation at --eval-every, checkpoints (weights, optimizer, sampler state) at
// --save-every and at the end, and an exact continuation from a checkpoint. What differs
// between recipes — the model, the batches, what validation measures — comes in a LoopSetup.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import cliProgress from "cli-progress";
import { InvalidArgumentError, Option, type Command } from "commander";
import type { Device } from "../../backends/index.js";
import { DEFAULT_TRAIN_OPTIONS, type StepResult, type Trainer, type TrainOptions } from "../../engines/train.js";
import { float, int } from "../common.js";
import { EventLog } from "../../engines/trainEvents.js";
import { restoreTrainingState, saveTrainingState } from "../../engines/trainState.js";
import type { Checkpoint, RunBundle } from "../../io/runs/bundle.js";

export function betas(value: string): [number, number] {
  const b = value.split(",").map(Number);
  if (b.length !== 2 || b.some((x) => !(x >= 0 && x < 1))) throw new InvalidArgumentError(`--betas must be two numbers in [0, 1) like 0.9,0.95, got "${value}"`);
  return [b[0], b[1]];
}

/** What every recipe's flags hold: the optimizer's, the run's length and seed, the bundle's. */
export interface CommonTrainFlags {
  steps: number;
  batch: number;
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  schedule: "constant" | "cosine";
  warmup: number;
  clip: number;
  seed: number;
  evalEvery: number;
  saveEvery: number;
  out: string;
  json?: boolean;
  backend?: string;
  threads?: number;
}

/** The optimizer's flags, --lr to --clip, with a recipe's own defaults where it has them. */
export function optimizerFlags(cmd: Command, r: { lr: number; weightDecay: number; warmup: number }): Command {
  const d = DEFAULT_TRAIN_OPTIONS;
  return cmd
    .option("--lr <x>", "peak learning rate", float("--lr", 0), r.lr)
    .option("--betas <b1,b2>", "AdamW betas", betas, d.betas)
    .option("--eps <x>", "AdamW epsilon", float("--eps", 0), d.eps)
    .option("--weight-decay <x>", "decoupled weight decay (tensors with 2+ dims)", float("--weight-decay", 0), r.weightDecay)
    .addOption(new Option("--schedule <kind>", "learning-rate schedule").choices(["constant", "cosine"]).default(d.schedule))
    .option("--warmup <n>", "linear warmup steps", int("--warmup", 0), r.warmup)
    .option("--clip <x>", "global gradient-norm clipping (0: off)", float("--clip", 0), d.clip);
}

export function toyVersion(): string {
  return (JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

export interface LoopSetup<B> {
  run: { trainer: Trainer<B>; step(batches: readonly B[]): StepResult; save(path: string): void };
  bundle: RunBundle;
  /** The checkpoint a resumed run continues from (its sampler state already restored). */
  ckpt?: Checkpoint;
  flags: { steps: number; evalEvery: number; saveEvery: number; seed: number; json?: boolean };
  options: TrainOptions;
  backend: Device;
  /** run_start's fields besides run_id, options, seed, backend and versions. */
  start: Record<string, unknown>;
  /** What a step's throughput counts: "tokens" (events tokens, tokens_per_s) or "images". */
  unit: "tokens" | "images";
  /** The micro-batches of the next step. */
  nextBatch(): B[];
  /** The data sampler's state after the step, saved with each checkpoint. */
  samplerState(): number[];
  /** Validation: the eval event's fields and a line for the log (null: no validation data). */
  evaluate: (() => { fields: Record<string, number>; text: string }) | null;
  /** Also checkpoint the untrained model as step-0.gguf. */
  saveInitial: boolean;
  /** The final checkpoint's file name (default final.gguf), and what else to write after it. */
  finalName?: string;
  afterFinal?(log: EventLog): void;
  /** state.json's "run": everything needed to rebuild the run. */
  spec: Record<string, unknown>;
}

export async function runLoop<B>(s: LoopSetup<B>): Promise<void> {
  const { run, bundle, ckpt, flags } = s;
  const start = ckpt?.state.step ?? 0;
  if (ckpt) {
    restoreTrainingState(run.trainer as Trainer<unknown>, ckpt);
    bundle.truncateEvents(start);
  }
  const log = new EventLog(bundle.eventsPath, flags.json ? (line) => process.stdout.write(line + "\n") : undefined);
  const unit = s.unit === "tokens" ? "tok" : "img";
  const bar = !flags.json && process.stderr.isTTY
    ? new cliProgress.SingleBar({
      format: `[{bar}] step {value}/{total}  loss {loss}  {tps} ${unit}/s  {duration_formatted} elapsed, eta {eta_formatted}`,
      stream: process.stderr, hideCursor: true, etaBuffer: 20,
    }, cliProgress.Presets.shades_classic)
    : undefined;
  const say = (line: string) => {
    if (flags.json) return;
    // On a terminal, clear the bar's line first; it is redrawn at the next update.
    process.stderr.write(bar ? `\r\x1b[2K${line}\n` : line + "\n");
  };

  if (!ckpt) {
    log.emit({
      event: "run_start", run_id: bundle.id, ...s.start, options: s.options, seed: flags.seed, backend: s.backend,
      versions: { toy: toyVersion(), node: process.versions.node },
    });
  } else {
    if (!bundle.events().some((e) => e.event === "checkpoint" && e.step === start)) log.emit({ event: "checkpoint", step: start, path: ckpt.ggufPath });
    log.emit({ event: "resume", step: start, checkpoint: ckpt.ggufPath });
    say(`resuming ${bundle.dir} at step ${start}/${flags.steps}`);
  }

  const evaluate = (step: number) => {
    if (!s.evaluate) return;
    const { fields, text } = s.evaluate();
    log.emit({ event: "eval", step, ...fields });
    say(`step ${step}  ${text}`);
  };
  const save = (step: number, name: string) => {
    const path = join(bundle.weights, name);
    run.save(path);
    saveTrainingState(bundle.weights, name, run.trainer as Trainer<unknown>, s.samplerState(), s.spec);
    log.emit({ event: "checkpoint", step, path });
    bundle.drawLossCurve();
  };

  const started = performance.now();
  if (!ckpt) {
    evaluate(0);
    if (s.saveInitial) save(0, "step-0.gguf"); // the untrained model, to compare against
  }
  bar?.start(flags.steps, start, { loss: "-", tps: "-" });
  let last: StepResult | undefined;
  for (let i = start; i < flags.steps; i++) {
    const r = run.step(s.nextBatch());
    last = r;
    const tps = r.tokens / r.seconds;
    log.emit({ event: "step", step: r.step, loss: r.loss, lr: r.lr, grad_norm: r.gradNorm, [s.unit]: r.tokens, [`${s.unit}_per_s`]: tps });
    if (bar) bar.update(i + 1, { loss: r.loss.toFixed(4), tps: tps.toFixed(0) });
    else say(`step ${r.step + 1}/${flags.steps}  loss ${r.loss.toFixed(4)}  lr ${r.lr.toExponential(2)}  |g| ${r.gradNorm.toFixed(3)}  ${tps.toFixed(0)} ${unit}/s`);
    if (flags.evalEvery > 0 && (i + 1) % flags.evalEvery === 0 && i + 1 < flags.steps) { evaluate(i + 1); bundle.drawLossCurve(); }
    if (flags.saveEvery > 0 && (i + 1) % flags.saveEvery === 0 && i + 1 < flags.steps) save(i + 1, `step-${i + 1}.gguf`);
  }
  bar?.stop();
  evaluate(flags.steps);
  save(flags.steps, s.finalName ?? "final.gguf");
  s.afterFinal?.(log);
  log.emit({ event: "run_end", run_id: bundle.id, steps: flags.steps, final_loss: last?.loss ?? null, seconds: (performance.now() - started) / 1000 });
  bundle.drawLossCurve();
  say(`run bundle: ${bundle.dir}`);
}
