// Saving and restoring the training state beside a checkpoint, so a resumed run continues with
// exactly the numbers the uninterrupted run would have: AdamW's m and v (one binary of float32,
// tensors in a recorded order), its step count, and the data sampler's random state.
// Order of writes: the GGUF, then the optimizer file, then state.json (the manifest) — each
// atomic — so a kill at any moment leaves the last complete checkpoint usable.

import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { STATE_SCHEMA, type Checkpoint, type CheckpointState } from "../io/runs/bundle.js";
import { writeFileAtomic } from "../io/runs/atomic.js";
import type { Trainer } from "./trainer.js";

/** Write the optimizer file and state.json for a checkpoint whose GGUF is already at weights/<gguf>. */
export function saveTrainingState(weightsDir: string, gguf: string, trainer: Trainer, rng: number[], run: Record<string, unknown>): CheckpointState {
  const stem = gguf.replace(/\.gguf$/, "");
  const optimizer = `${stem}.optim.bin`;
  const { m, v, step } = trainer.optimizer.state;
  const tensors = [...trainer.params.values].filter(([name]) => m.has(name)).map(([name, p]) => ({ name, length: p.length }));
  const parts: Uint8Array[] = [];
  for (const { name } of tensors) for (const a of [m.get(name)!, v.get(name)!]) parts.push(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  writeFileAtomic(join(weightsDir, optimizer), parts);
  const state: CheckpointState = {
    schema: STATE_SCHEMA, step: trainer.stepsDone, gguf, optimizer,
    ggufBytes: statSync(join(weightsDir, gguf)).size, optimizerBytes: parts.reduce((n, p) => n + p.byteLength, 0),
    optimizerStep: step, tensors, rng, run,
  };
  writeFileAtomic(join(weightsDir, `${stem}.state.json`), JSON.stringify(state, null, 1) + "\n");
  return state;
}

/** Put a checkpoint's optimizer state and step count back into a trainer (its parameters come from the GGUF). */
export function restoreTrainingState(trainer: Trainer, ckpt: Checkpoint): void {
  const bytes = readFileSync(ckpt.optimizerPath);
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const { m, v } = trainer.optimizer.state;
  m.clear(); v.clear();
  let off = 0;
  for (const { name, length } of ckpt.state.tensors) {
    if (!trainer.params.values.has(name)) throw new RangeError(`resume: the optimizer state has tensor ${name}, the model does not`);
    m.set(name, all.slice(off, off + length)); off += length;
    v.set(name, all.slice(off, off + length)); off += length;
  }
  if (off !== all.length) throw new RangeError(`resume: ${ckpt.optimizerPath} holds ${all.length} floats, the state lists ${off}`);
  trainer.optimizer.state.step = ckpt.state.optimizerStep;
  trainer.stepsDone = ckpt.state.step;
}
