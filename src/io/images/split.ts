// Turning one labelled set into a training and an evaluation split, and standardizing the two
// alike with statistics from the training split.

import { Rng } from "../../data/rng.js";
import { UsageError } from "../../errors.js";
import { selectImages, type ImageSet, type ImageSplit, type Normalization } from "./imageSet.js";
import { computeNormalization, normalize } from "./normalize.js";
import { shuffled } from "./shuffle.js";

/**
 * A seeded, stratified split: within each class, a seeded shuffle of its images, of which
 * round(n_c · evalFraction) go to evaluation and the rest to training. Stratifying keeps the
 * class balance of both splits equal to the whole set's. Both splits stay in the set's order.
 */
export function splitByFraction(set: ImageSet, evalFraction: number, seed: number): { train: ImageSet; eval: ImageSet } {
  if (!(evalFraction >= 0 && evalFraction <= 1)) throw new UsageError(`evalFraction ${evalFraction}: expected a number in [0, 1]`);
  const byClass: number[][] = set.classes.map(() => []);
  set.labels.forEach((l, i) => byClass[l].push(i));
  const rng = new Rng(seed);
  const isEval = new Uint8Array(set.count);
  for (const members of byClass) {
    const order = shuffled(members.length, rng);
    const nEval = Math.round(members.length * evalFraction);
    for (let k = 0; k < nEval; k++) isEval[members[order[k]]] = 1;
  }
  const trainIdx: number[] = [], evalIdx: number[] = [];
  for (let i = 0; i < set.count; i++) (isEval[i] ? evalIdx : trainIdx).push(i);
  return { train: selectImages(set, trainIdx), eval: selectImages(set, evalIdx) };
}

/**
 * Standardize both splits: `true` with the training split's own statistics, a Normalization
 * with that one, `false` not at all (pixels stay in [0, 1]).
 */
export function standardize(train: ImageSet, evalSet: ImageSet, how: boolean | Normalization): Omit<ImageSplit, "description"> {
  if (how === false) return { train, eval: evalSet, normalization: null };
  const norm = how === true ? computeNormalization(train) : how;
  return { train: normalize(train, norm), eval: normalize(evalSet, norm), normalization: norm };
}
