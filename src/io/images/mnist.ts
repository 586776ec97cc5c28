// MNIST (and the sets that copy its files: Fashion-MNIST, KMNIST) from a folder of IDX files.
// The folder holds an image/label pair for training (train-images-idx3-ubyte,
// train-labels-idx1-ubyte), one for testing (t10k-…), or both; each file plain or `.gz`, and the
// `-idx3-ubyte` may be spelled `.idx3-ubyte`.
//
// The split:
//   train and t10k present  train on train, evaluate on t10k (all of each unless trainCount /
//                           evalCount take fewer, from the front).
//   only one pair present   its first trainCount images train and its last evalCount evaluate;
//                           by default the last fifth evaluates (t10k's 10,000 → 8,000 + 2,000).
// No shuffling happens here: the split is the files' own order, so it is the same everywhere.

import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { DataFileError, UsageError } from "../../errors.js";
import { readIdx } from "./idx.js";
import { sliceImages, type ImageSet, type ImageSplit, type Normalization } from "./imageSet.js";
import { standardize } from "./split.js";

export interface MnistOptions {
  /** Images in the training split (default: all of train, or the first 4/5 of a lone pair). */
  trainCount?: number;
  /** Images in the evaluation split (default: all of t10k, or the last 1/5 of a lone pair). */
  evalCount?: number;
  /** true (default): standardize with the training split's statistics; false: keep [0, 1];
   * a Normalization: apply that one (e.g. one saved in a checkpoint). */
  normalize?: boolean | Normalization;
}

export interface MnistPair { images: string; labels: string }
export interface MnistFiles { train?: MnistPair; test?: MnistPair }

/** The name of an MNIST IDX file: (part, kind, rank, .gz). */
export const MNIST_FILE = /^(train|t10k)-(images|labels)[-.]idx([13])-ubyte(\.gz)?$/i;

/** The IDX pairs in a folder (a plain file is preferred over a .gz of the same name). */
export function findMnistFiles(dir: string): MnistFiles {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new DataFileError(`${dir}: no such folder`);
  const found: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const m = MNIST_FILE.exec(name);
    if (!m) continue;
    const [, part, kind, rank] = m;
    if ((kind.toLowerCase() === "images") !== (rank === "3")) continue; // images are idx3, labels idx1
    const key = `${part.toLowerCase()}-${kind.toLowerCase()}`;
    if (!found[key] || !m[4]) found[key] = join(dir, name);
  }
  const pair = (part: string): MnistPair | undefined => {
    const images = found[`${part}-images`], labels = found[`${part}-labels`];
    if (!images && !labels) return undefined;
    if (!images || !labels) {
      throw new DataFileError(`${dir}: has ${images ?? labels} but not its ${images ? "labels" : "images"} (${part}-${images ? "labels-idx1" : "images-idx3"}-ubyte[.gz])`);
    }
    return { images, labels };
  };
  const files = { train: pair("train"), test: pair("t10k") };
  if (!files.train && !files.test) {
    throw new DataFileError(`${dir}: no MNIST files (expected train-images-idx3-ubyte and train-labels-idx1-ubyte, or the t10k-… pair, plain or .gz)`);
  }
  return files;
}

/** One image/label pair as an ImageSet: [N, 1·H·W] pixels in [0, 1], classes "0" … max label. */
export function loadMnistPair(pair: MnistPair): ImageSet {
  const images = readIdx(pair.images), labels = readIdx(pair.labels);
  if (images.type !== 0x08 || images.dims.length !== 3) {
    throw new DataFileError(`${pair.images}: expected ubyte images of dims [N, rows, cols], found type 0x${images.type.toString(16).padStart(2, "0")} dims [${images.dims.join(", ")}]`);
  }
  if (labels.type !== 0x08 || labels.dims.length !== 1) {
    throw new DataFileError(`${pair.labels}: expected ubyte labels of dims [N], found type 0x${labels.type.toString(16).padStart(2, "0")} dims [${labels.dims.join(", ")}]`);
  }
  const [count, height, width] = images.dims;
  if (labels.dims[0] !== count) throw new DataFileError(`${pair.labels}: ${labels.dims[0]} labels, expected ${count} (the images in ${pair.images})`);
  const pixels = new Float32Array(images.data.length);
  for (let i = 0; i < pixels.length; i++) pixels[i] = images.data[i] / 255;
  const ids = Int32Array.from(labels.data);
  const nClasses = ids.reduce((m, l) => Math.max(m, l + 1), 0);
  return {
    count, height, width, channels: 1, pixels, labels: ids,
    classes: Array.from({ length: nClasses }, (_, i) => String(i)), normalization: null,
  };
}

/** MNIST's training and evaluation splits from a folder of IDX files (see the top of this file). */
export function loadMnistDir(dir: string, options: MnistOptions = {}): ImageSplit {
  const files = findMnistFiles(dir);
  const { trainCount, evalCount } = options;
  for (const [flag, v] of [["trainCount", trainCount], ["evalCount", evalCount]] as const) {
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new UsageError(`${flag} ${v}: expected a whole number ≥ 0`);
  }
  let train: ImageSet, test: ImageSet, description: string;
  if (files.train && files.test) {
    const all = loadMnistPair(files.train), t10k = loadMnistPair(files.test);
    if (t10k.height !== all.height || t10k.width !== all.width) {
      throw new DataFileError(`${files.test.images}: images are ${t10k.height}×${t10k.width}, expected ${all.height}×${all.width} as in ${files.train.images}`);
    }
    const nTrain = within(trainCount ?? all.count, all.count, "trainCount", files.train.images);
    const nEval = within(evalCount ?? t10k.count, t10k.count, "evalCount", files.test.images);
    train = sliceImages(all, 0, nTrain);
    test = sliceImages(t10k, 0, nEval);
    description = `${dir}: train ${nTrain === all.count ? "all" : `first ${nTrain}`} of ${all.count}, evaluate on t10k ${nEval === t10k.count ? "all" : `first ${nEval}`} of ${t10k.count}`;
  } else {
    const pair = (files.test ?? files.train)!, part = files.test ? "t10k" : "train";
    const all = loadMnistPair(pair), N = all.count;
    const nEval = evalCount ?? (trainCount !== undefined ? N - Math.min(trainCount, N) : Math.round(N / 5));
    const nTrain = trainCount ?? N - Math.min(nEval, N);
    if (nTrain + nEval > N) throw new UsageError(`trainCount ${nTrain} + evalCount ${nEval}: ${pair.images} holds only ${N} images`);
    train = sliceImages(all, 0, nTrain);
    test = sliceImages(all, N - nEval, N);
    description = `${dir}: only the ${part} files; train on the first ${nTrain} of ${N}, evaluate on the last ${nEval}`;
  }
  // Both splits name every class either one uses.
  const classes = train.classes.length >= test.classes.length ? train.classes : test.classes;
  return { ...standardize({ ...train, classes }, { ...test, classes }, options.normalize ?? true), description };
}

function within(n: number, max: number, flag: string, file: string): number {
  if (n > max) throw new UsageError(`${flag} ${n}: ${file} holds only ${max} images`);
  return n;
}
