// Evaluating an image classifier on a labelled set: accuracy, mean cross-entropy and the
// confusion matrix (rows: the true class, columns: the predicted one). A prediction is the
// class with the largest logit (ties → the smaller id).

import type { VisionModel } from "../archs/vit.js";
import { batchesInOrder, type ImageSet } from "../io/images/index.js";

export interface ClassifyResult {
  /** Images evaluated. */
  count: number;
  correct: number;
  /** correct / count */
  accuracy: number;
  /** Mean −log p(true class), in nats. */
  loss: number;
  /** confusion[true][predicted]: image counts, [classes, classes] */
  confusion: number[][];
  classes: string[];
}

export function classify(model: VisionModel, set: ImageSet, batchSize = 250, onProgress?: (done: number, total: number) => void): ClassifyResult {
  const K = model.config.nClasses;
  const confusion = Array.from({ length: K }, () => new Array<number>(K).fill(0));
  let correct = 0, loss = 0, done = 0;
  for (const batch of batchesInOrder(set, batchSize)) {
    const z = model.forward(batch.pixels, batch.size).data;                            // [B, K]
    for (let b = 0; b < batch.size; b++) {
      const row = z.subarray(b * K, (b + 1) * K), label = batch.labels[b];
      let best = 0, max = -Infinity;
      for (let k = 0; k < K; k++) if (row[k] > max) { max = row[k]; best = k; }
      let sum = 0;
      for (let k = 0; k < K; k++) sum += Math.exp(row[k] - max);
      loss += max + Math.log(sum) - row[label];
      confusion[label][best]++;
      if (best === label) correct++;
    }
    done += batch.size;
    onProgress?.(done, set.count);
  }
  return { count: set.count, correct, accuracy: set.count > 0 ? correct / set.count : 0, loss: set.count > 0 ? loss / set.count : 0, confusion, classes: model.classes };
}

/** The confusion matrix as text: a header of predicted classes, one row per true class. */
export function formatConfusion(r: Pick<ClassifyResult, "confusion" | "classes">): string {
  const names = r.classes;
  const w = Math.max(...names.map((n) => n.length), ...r.confusion.flat().map((v) => String(v).length), 4);
  const lab = Math.max(...names.map((n) => n.length), "true\\pred".length);
  const lines = [`${"true\\pred".padEnd(lab)} ${names.map((n) => n.padStart(w)).join(" ")}`];
  r.confusion.forEach((row, i) => lines.push(`${names[i].padEnd(lab)} ${row.map((v) => String(v).padStart(w)).join(" ")}`));
  return lines.join("\n") + "\n";
}
