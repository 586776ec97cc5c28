// Seeded permutations, and seeds derived from a run's seed for one purpose and one moment
// (an epoch's shuffle, a batch's augmentation), so that each can be regenerated from its
// position alone: resuming needs no saved generator state, only where the data was.

import { Rng } from "../../data/rng.js";

/** A uniformly random permutation of 0 … n − 1 (Fisher–Yates, drawing from `rng`). */
export function shuffled(n: number, rng: Rng): Int32Array {
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    const t = order[i]; order[i] = order[j]; order[j] = t;
  }
  return order;
}

/** Purposes a derived seed is for; distinct so two streams never coincide. */
export const STREAM = { shuffle: 1, augment: 2 } as const;

/** A 32-bit seed from a run seed and integers naming a stream and a position (MurmurHash3's rounds). */
export function seedFor(seed: number, ...parts: number[]): number {
  let h = seed >>> 0;
  for (const p of parts) {
    let k = Math.imul(p >>> 0, 0xcc9e2d51);
    k = Math.imul(rotl(k >>> 0, 15), 0x1b873593);
    h = rotl((h ^ k) >>> 0, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) >>> 0;
  }
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

const rotl = (x: number, r: number): number => ((x << r) | (x >>> (32 - r))) >>> 0;
