// Reading the reference outputs of ../shared/fixtures/refs and comparing logits against them.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";

export interface RefPosition {
  logsumexp: number;
  top: [number, number][];
}

export interface Ref {
  model: string;
  n_vocab: number;
  prompt: number[];
  positions: RefPosition[];
  greedy: number[];
  greedy_margins: number[];
}

export function loadRef(fixtures: string, engine: "llamacpp" | "exact", model: string): Ref | undefined {
  const path = join(fixtures, "refs", engine, `${model}.json`);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Ref) : undefined;
}

/** Largest |Δ| between our logits and the reference's top-16 logits and logsumexp, over all positions. */
export function maxLogitError(ref: Ref, logits: (pos: number) => ArrayLike<number>, lse: (pos: number) => number): number {
  let worst = 0;
  ref.positions.forEach((p, i) => {
    const row = logits(i);
    for (const [id, value] of p.top) worst = Math.max(worst, Math.abs(row[id] - value));
    worst = Math.max(worst, Math.abs(lse(i) - p.logsumexp));
  });
  return worst;
}

/** The top-1 of each position must be the reference's, unless its top-2 margin is within tol. */
export function assertTop1(ref: Ref, logits: (pos: number) => ArrayLike<number>, tol: number, label: string): void {
  ref.positions.forEach((p, i) => {
    const row = logits(i);
    let best = 0;
    for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
    const margin = p.top.length > 1 ? p.top[0][1] - p.top[1][1] : Infinity;
    if (margin > tol) assert.equal(best, p.top[0][0], `${label}: top-1 at prompt position ${i}`);
  });
}

/**
 * Greedy continuations agree up to the first step where the reference's top-2 margin is below
 * `tol` (there the two best tokens may legitimately swap). Returns how many steps were compared.
 */
export function assertGreedy(ref: Ref, ours: number[], tol: number, label: string): number {
  let n = 0;
  for (; n < ref.greedy.length; n++) {
    if (ref.greedy_margins[n] < tol) break;
    assert.equal(ours[n], ref.greedy[n], `${label}: greedy token ${n} (reference margin ${ref.greedy_margins[n]})`);
  }
  if (n === ref.greedy.length) return n;
  // At the ambiguous step our token must be one of the two nearly tied ones (checked by caller's logits).
  return n;
}
