// A run bundle: DIR/<id>/ with
//   events.jsonl              toy/v1 events, one per line
//   loss.svg                  the loss curve, rewritten at every eval and checkpoint
//   weights/step-N.gguf       checkpoints (F32 GGUF; final.gguf at the end)
//   weights/step-N.optim.bin  AdamW m and v beside each checkpoint
//   weights/step-N.state.json the checkpoint's manifest: step, optimizer step, random state, the
//                             run's settings and the sizes of the two files above. It is written
//                             last, so a checkpoint counts only once all of it is on disk.

import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { writeFileAtomic } from "./atomic.js";
import { lossCurveSvg, type CurvePoint } from "./lossCurve.js";

export const STATE_SCHEMA = "toy-train-state/v1";

/** What a checkpoint's state.json holds. */
export interface CheckpointState {
  schema: typeof STATE_SCHEMA;
  /** Steps taken when the checkpoint was written. */
  step: number;
  /** File names inside weights/. */
  gguf: string;
  optimizer: string;
  ggufBytes: number;
  optimizerBytes: number;
  /** AdamW's step count and the order of tensors in the optimizer file. */
  optimizerStep: number;
  tensors: { name: string; length: number }[];
  /** The data sampler's random state after the step. */
  rng: number[];
  /** Everything needed to rebuild the run (recipe, flags, options). */
  run: Record<string, unknown>;
}

export interface Checkpoint {
  state: CheckpointState;
  ggufPath: string;
  optimizerPath: string;
  statePath: string;
}

export class RunBundle {
  readonly weights: string;
  readonly eventsPath: string;
  constructor(readonly dir: string, readonly id = basename(dir)) {
    this.weights = join(dir, "weights");
    this.eventsPath = join(dir, "events.jsonl");
  }

  /** A fresh bundle DIR/<id>/ (an id from the time and a label, made unique). */
  static create(out: string, label: string, id?: string): RunBundle {
    const base = id ?? `${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${label.replace(/[^A-Za-z0-9._-]+/g, "-")}`;
    let name = base;
    for (let n = 2; existsSync(join(out, name)); n++) name = `${base}-${n}`;
    const bundle = new RunBundle(join(out, name), name);
    mkdirSync(bundle.weights, { recursive: true });
    return bundle;
  }

  /** The events logged so far. */
  events(): Record<string, unknown>[] {
    if (!existsSync(this.eventsPath)) return [];
    return readFileSync(this.eventsPath, "utf8").split("\n").filter((l) => l.trim() !== "").flatMap((l) => {
      try { return [JSON.parse(l) as Record<string, unknown>]; } catch { return []; } // a line cut short by a kill
    });
  }

  /** Keep the events up to a checkpoint at `step` (what a resumed run continues from). */
  truncateEvents(step: number): void {
    const keep = this.events().filter((e) => {
      const s = e.step as number;
      if (e.event === "step") return s < step;
      if (e.event === "eval" || e.event === "checkpoint") return s <= step;
      return e.event !== "run_end";
    });
    writeFileAtomic(this.eventsPath, keep.map((e) => JSON.stringify(e) + "\n").join(""));
  }

  /** Redraw loss.svg from the events. */
  drawLossCurve(title = this.id): void {
    const events = this.events();
    const train: CurvePoint[] = events.filter((e) => e.event === "step").map((e) => ({ step: (e.step as number) + 1, loss: e.loss as number }));
    const val: CurvePoint[] = events.filter((e) => e.event === "eval").map((e) => ({ step: e.step as number, loss: e.val_loss as number }));
    writeFileAtomic(join(this.dir, "loss.svg"), lossCurveSvg(train, val, title));
  }

  /** Every complete checkpoint (its state.json and both files present, at their recorded sizes), by step. */
  checkpoints(): Checkpoint[] {
    if (!existsSync(this.weights)) return [];
    const out: Checkpoint[] = [];
    for (const f of readdirSync(this.weights)) {
      if (!f.endsWith(".state.json")) continue;
      const statePath = join(this.weights, f);
      let state: CheckpointState;
      try { state = JSON.parse(readFileSync(statePath, "utf8")) as CheckpointState; } catch { continue; }
      if (state.schema !== STATE_SCHEMA) continue;
      const ggufPath = join(this.weights, state.gguf), optimizerPath = join(this.weights, state.optimizer);
      if (!sizeIs(ggufPath, state.ggufBytes) || !sizeIs(optimizerPath, state.optimizerBytes)) continue;
      out.push({ state, ggufPath, optimizerPath, statePath });
    }
    return out.sort((a, b) => a.state.step - b.state.step || Number(a.state.gguf === "final.gguf") - Number(b.state.gguf === "final.gguf"));
  }

  latest(): Checkpoint | undefined {
    return this.checkpoints().at(-1);
  }
}

const sizeIs = (path: string, bytes: number) => existsSync(path) && statSync(path).size === bytes;

/** Is this folder a run bundle (events.jsonl or weights/ inside)? */
export function isRunDir(dir: string): boolean {
  return existsSync(join(dir, "events.jsonl")) || existsSync(join(dir, "weights"));
}

/**
 * The GGUF a run folder stands for: its latest complete checkpoint (a LoRA run: its merged
 * model), else (a run without state files) weights/final.gguf or the highest weights/step-N.gguf.
 */
export function runModelPath(dir: string): string | undefined {
  const latest = new RunBundle(dir).latest();
  if (latest?.state.run.recipe === "lora") {
    // A LoRA run's checkpoints are adapters: the run stands for its merged model, if written.
    const merged = join(dir, "weights", "merged.gguf");
    return existsSync(merged) ? merged : undefined;
  }
  if (latest) return latest.ggufPath;
  const weights = join(dir, "weights");
  if (!existsSync(weights)) return undefined;
  if (existsSync(join(weights, "final.gguf"))) return join(weights, "final.gguf");
  const steps = readdirSync(weights).map((f) => /^step-(\d+)\.gguf$/.exec(f)).filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(b[1]) - Number(a[1]));
  return steps.length ? join(weights, steps[0][0]) : undefined;
}

