// The flags every `toy train` recipe shares, and how the run loop (src/train/loop.ts) shows
// itself on the command line: a progress bar on a terminal, log lines on stderr, or (--json)
// the events on stdout.

import cliProgress from "cli-progress";
import { InvalidArgumentError, Option, type Command } from "commander";
import type { LoopOutput } from "../../train/loop.js";
import { DEFAULT_TRAIN_OPTIONS } from "../../train/trainer.js";
import { float, int } from "../common.js";

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
export function optimizerFlags(cmd: Command, r: { lr: number; weightDecay: number; warmup: number; schedule?: "constant" | "cosine" }): Command {
  const d = DEFAULT_TRAIN_OPTIONS;
  return cmd
    .option("--lr <x>", "peak learning rate", float("--lr", 0), r.lr)
    .option("--betas <b1,b2>", "AdamW betas", betas, d.betas)
    .option("--eps <x>", "AdamW epsilon", float("--eps", 0), d.eps)
    .option("--weight-decay <x>", "decoupled weight decay (tensors with 2+ dims)", float("--weight-decay", 0), r.weightDecay)
    .addOption(new Option("--schedule <kind>", "learning-rate schedule").choices(["constant", "cosine"]).default(r.schedule ?? d.schedule))
    .option("--warmup <n>", "linear warmup steps", int("--warmup", 0), r.warmup)
    .option("--clip <x>", "global gradient-norm clipping (0: off)", float("--clip", 0), d.clip);
}

/** The loop's output on the command line: --json prints the events; otherwise a bar on a
 *  terminal (log lines clear it first) or one line per step. */
export function loopOutput(json: boolean | undefined, unit: "tokens" | "images"): LoopOutput {
  if (json) return { event: (line) => process.stdout.write(line + "\n") };
  const u = unit === "tokens" ? "tok" : "img";
  const bar = process.stderr.isTTY
    ? new cliProgress.SingleBar({
      format: `[{bar}] step {value}/{total}  loss {loss}  {tps} ${u}/s  {duration_formatted} elapsed, eta {eta_formatted}`,
      stream: process.stderr, hideCursor: true, etaBuffer: 20,
    }, cliProgress.Presets.shades_classic)
    : undefined;
  return {
    say: (line) => process.stderr.write(bar ? `\r\x1b[2K${line}\n` : line + "\n"),
    progress: bar && {
      start: (total, done) => bar.start(total, done, { loss: "-", tps: "-" }),
      update: (done, loss, perSecond) => bar.update(done, { loss: loss.toFixed(4), tps: perSecond.toFixed(0) }),
      stop: () => bar.stop(),
    },
  };
}
