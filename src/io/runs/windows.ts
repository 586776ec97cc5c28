// Training batches from a token stream, whatever it came from (a tokenized text or a
// pre-tokenized file): the last 10% is held out for the validation loss, and each batch is B
// windows of T + 1 tokens at seeded random positions of the first 90%. The random state is the
// only data position there is, so a checkpoint that saves it resumes onto the same windows.

import { Rng } from "../../data/rng.js";
import type { Batch } from "../../data/batch.js";
import { UsageError } from "../../errors.js";

/** Token ids as held in memory: Int32 from a tokenizer, a Uint16/Uint32 view of an id file. */
export type TokenStream = Int32Array | Uint16Array | Uint32Array;

/** Seeded random windows of a token stream: B rows of T inputs and their next tokens. */
export function windowBatch(tokens: TokenStream, B: number, T: number, rng: Rng): Batch {
  const input = new Int32Array(B * T), target = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const start = Math.floor(rng.next() * (tokens.length - T));
    // set() widens a Uint16/Uint32 window to Int32 here, one window at a time.
    input.set(tokens.subarray(start, start + T), b * T);
    target.set(tokens.subarray(start + 1, start + T + 1), b * T);
  }
  return { input, target, batch: B, seq: T };
}

export interface TrainingData {
  /** The next training batch (draws from `rng`). */
  nextBatch: () => Batch;
  /** A fixed validation batch from the held-out 10% (its own seed), or null when that is too short. */
  validation: Batch | null;
  trainTokens: number;
  validationTokens: number;
}

/** Split a token stream 90/10 and cut batches from it; `source` names it in errors. */
export function trainingData(all: TokenStream, source: string, opts: { batch: number; seq: number; seed: number }, rng: Rng): TrainingData {
  const split = Math.floor(all.length * 0.9);
  const train = all.subarray(0, split), val = all.subarray(split);
  if (train.length <= opts.seq + 1) {
    throw new UsageError(`--data ${source}: ${all.length} tokens is too few for --seq ${opts.seq} (the first 90% are trained on and must be longer than seq + 1)`);
  }
  return {
    nextBatch: () => windowBatch(train, opts.batch, opts.seq, rng),
    validation: val.length > opts.seq + 1 ? windowBatch(val, opts.batch, opts.seq, new Rng(opts.seed + 1)) : null,
    trainTokens: train.length,
    validationTokens: val.length,
  };
}
