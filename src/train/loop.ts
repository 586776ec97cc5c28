// The run loop every `toy train` recipe runs, for library users too: the events (toy/v1) of a
// run bundle, validation every evalEvery steps, checkpoints (weights, optimizer, sampler state)
// every saveEvery steps and at the end, and an exact continuation from a checkpoint (resume).
// What differs between recipes — the model, the batches, what validation measures — comes in a
// LoopSetup; what the caller shows (a progress bar, log lines) in its LoopOutput.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Device } from "../backends/index.js";
import type { StepResult, Trainer, TrainOptions } from "./trainer.js";
import { EventLog } from "./events.js";
import { restoreTrainingState, saveTrainingState } from "./state.js";
import type { Checkpoint, RunBundle } from "../io/runs/bundle.js";

export function toyVersion(): string {
  return (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

/** What the loop tells its caller besides the event file (all optional: a library run is quiet). */
export interface LoopOutput {
  /** Every event as the JSON line written to events.jsonl (`toy train --json` prints them). */
  event?(line: string): void;
  /** A line for a person: resuming, validation, each step when there is no progress bar. */
  say?(line: string): void;
  /** A progress display, updated after each step (a terminal's bar). */
  progress?: {
    start(total: number, done: number): void;
    update(done: number, loss: number, perSecond: number): void;
    stop(): void;
  };
}

export interface LoopSetup<B> {
  run: { trainer: Trainer<B>; step(batches: readonly B[]): StepResult; save(path: string): void };
  bundle: RunBundle;
  /** The checkpoint a resumed run continues from (its sampler state already restored). */
  ckpt?: Checkpoint;
  flags: { steps: number; evalEvery: number; saveEvery: number; seed: number };
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

export async function runLoop<B>(s: LoopSetup<B>, out: LoopOutput = {}): Promise<void> {
  const { run, bundle, ckpt, flags } = s;
  const start = ckpt?.state.step ?? 0;
  if (ckpt) {
    restoreTrainingState(run.trainer as Trainer<unknown>, ckpt);
    bundle.truncateEvents(start);
  }
  const log = new EventLog(bundle.eventsPath, out.event);
  const unit = s.unit === "tokens" ? "tok" : "img";
  const bar = out.progress;
  const say = (line: string) => out.say?.(line);

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
  bar?.start(flags.steps, start);
  let last: StepResult | undefined;
  for (let i = start; i < flags.steps; i++) {
    const r = run.step(s.nextBatch());
    last = r;
    const tps = r.tokens / r.seconds;
    log.emit({ event: "step", step: r.step, loss: r.loss, lr: r.lr, grad_norm: r.gradNorm, [s.unit]: r.tokens, [`${s.unit}_per_s`]: tps });
    if (bar) bar.update(i + 1, r.loss, tps);
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
