// Batches of images for training: each epoch visits the set in a seeded random order, B images
// at a time. The order of epoch e is a function of (seed, e) alone, and a batch's augmentation
// of (seed, e, index), so the state to save for an exact resume is just where the next batch
// starts: { epoch, index } (index = images of this epoch's order already handed out).
// Every batch is full: when fewer than B images are left in an epoch, the next epoch starts
// (those few are left out of this epoch; with shuffling they differ from epoch to epoch).

import { Rng } from "../../data/rng.js";
import { randomTranslate, type Augmentation } from "./augment.js";
import { imageSize, type ImageSet } from "./imageSet.js";
import { seedFor, shuffled, STREAM } from "./shuffle.js";

export interface BatchState {
  epoch: number;
  /** Position in the epoch's order of the next batch's first image. */
  index: number;
}

export interface ImageBatch {
  /** [B, C·H·W] */
  pixels: Float32Array;
  /** [B] */
  labels: Int32Array;
  /** B */
  size: number;
  /** Where this batch started. */
  start: BatchState;
}

export interface BatchOptions {
  batchSize: number;
  /** Seed of the shuffle and the augmentation (default 0). */
  seed?: number;
  /** Visit images in a seeded random order each epoch (default true); false: the set's order. */
  shuffle?: boolean;
  /** Random translation per image (default: none). */
  augment?: Augmentation | null;
  /** Start here instead of at epoch 0, index 0 (a resumed run's saved state). */
  state?: BatchState;
}

export class ImageBatches {
  readonly batchSize: number;
  readonly seed: number;
  readonly shuffle: boolean;
  readonly augment: Augmentation | null;
  private epoch = 0;
  private index = 0;
  private order: Int32Array | null = null; // the order of `orderEpoch`
  private orderEpoch = -1;

  constructor(readonly set: ImageSet, options: BatchOptions) {
    const B = options.batchSize;
    if (!(Number.isInteger(B) && B >= 1)) throw new RangeError(`batchSize ${B}: expected a whole number ≥ 1`);
    if (B > set.count) throw new RangeError(`batchSize ${B}: the set holds only ${set.count} images`);
    const k = options.augment?.maxShift ?? 0;
    if (!(Number.isInteger(k) && k >= 0)) throw new RangeError(`augment.maxShift ${k}: expected a whole number ≥ 0`);
    this.batchSize = B;
    this.seed = options.seed ?? 0;
    this.shuffle = options.shuffle ?? true;
    this.augment = k > 0 ? { maxShift: k } : null;
    if (options.state) this.state = options.state;
  }

  /** Full batches per epoch: ⌊N / B⌋. */
  get batchesPerEpoch(): number {
    return Math.floor(this.set.count / this.batchSize);
  }

  /** Where the next batch starts: save it with a checkpoint, set it to resume. */
  get state(): BatchState {
    return { epoch: this.epoch, index: this.index };
  }
  set state(s: BatchState) {
    if (!(Number.isInteger(s.epoch) && s.epoch >= 0 && Number.isInteger(s.index) && s.index >= 0 && s.index <= this.set.count)) {
      throw new RangeError(`batch state ${JSON.stringify(s)}: expected whole numbers, epoch ≥ 0 and 0 ≤ index ≤ ${this.set.count}`);
    }
    this.epoch = s.epoch;
    this.index = s.index;
  }

  /** The next B images (and their labels), augmented when asked. */
  next(): ImageBatch {
    const B = this.batchSize;
    if (this.index + B > this.set.count) { this.epoch++; this.index = 0; }
    const start = this.state, order = this.orderOf(this.epoch);
    const size = imageSize(this.set);
    let pixels: Float32Array = new Float32Array(B * size);
    const labels = new Int32Array(B);
    for (let b = 0; b < B; b++) {
      const j = order ? order[this.index + b] : this.index + b;
      pixels.set(this.set.pixels.subarray(j * size, (j + 1) * size), b * size);
      labels[b] = this.set.labels[j];
    }
    if (this.augment) pixels = randomTranslate(pixels, this.set, this.augment.maxShift, new Rng(seedFor(this.seed, STREAM.augment, start.epoch, start.index)));
    this.index += B;
    return { pixels, labels, size: B, start };
  }

  /** The visiting order of an epoch (null: the set's own order). */
  private orderOf(epoch: number): Int32Array | null {
    if (!this.shuffle) return null;
    if (this.orderEpoch !== epoch) {
      this.order = shuffled(this.set.count, new Rng(seedFor(this.seed, STREAM.shuffle, epoch)));
      this.orderEpoch = epoch;
    }
    return this.order;
  }
}

/** The whole set in its own order, B at a time (the last batch may be smaller): for evaluation. */
export function* batchesInOrder(set: ImageSet, batchSize: number): Generator<ImageBatch> {
  if (!(Number.isInteger(batchSize) && batchSize >= 1)) throw new RangeError(`batchSize ${batchSize}: expected a whole number ≥ 1`);
  const size = imageSize(set);
  for (let i = 0; i < set.count; i += batchSize) {
    const B = Math.min(batchSize, set.count - i);
    yield {
      pixels: set.pixels.slice(i * size, (i + B) * size), labels: set.labels.slice(i, i + B), size: B,
      start: { epoch: 0, index: i },
    };
  }
}
