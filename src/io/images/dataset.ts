// A folder of training images, whatever its layout: MNIST's IDX files (mnist.ts) when it holds
// them, else one sub-folder of PNG/JPEG images per class (folder.ts). What `toy train vit
// --data DIR` reads. A folder that is neither is a DataFileError (exit 3) saying what was looked for.

import { existsSync, readdirSync, statSync } from "node:fs";
import { DataFileError, EXIT, ToyError } from "../../errors.js";
import { loadImageFolder } from "./folder.js";
import type { ImageSplit, Normalization } from "./imageSet.js";
import { loadMnistDir, MNIST_FILE } from "./mnist.js";

export interface ImageDataOptions {
  /** MNIST: images in the training and evaluation splits (see loadMnistDir). */
  trainCount?: number;
  evalCount?: number;
  /** Class folders: the share of each class held out for evaluation, and the split's seed. */
  evalFraction?: number;
  seed?: number;
  normalize?: boolean | Normalization;
}

export function loadImageData(dir: string, options: ImageDataOptions = {}): ImageSplit {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new DataFileError(`${dir}: no such folder (expected MNIST's IDX files, or one sub-folder of images per class)`);
  const entries = readdirSync(dir, { withFileTypes: true });
  try {
    if (entries.some((e) => e.isFile() && MNIST_FILE.test(e.name))) {
      return loadMnistDir(dir, { trainCount: options.trainCount, evalCount: options.evalCount, normalize: options.normalize });
    }
    if (!entries.some((e) => e.isDirectory() && !e.name.startsWith("."))) {
      throw new DataFileError(`${dir}: neither MNIST files (train-images-idx3-ubyte and train-labels-idx1-ubyte, or the t10k-… pair, plain or .gz) nor class folders of PNG/JPEG images`);
    }
    return loadImageFolder(dir, { evalFraction: options.evalFraction, seed: options.seed, normalize: options.normalize });
  } catch (e) {
    // A half pair of MNIST files or an empty class folder is a bad data folder too.
    if (e instanceof ToyError && e.exitCode === EXIT.runtime) throw new DataFileError(e.message);
    throw e;
  }
}
