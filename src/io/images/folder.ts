// An image folder: one sub-folder per class (torchvision's ImageFolder layout),
//   DIR/cat/001.png, DIR/cat/more/002.jpg, DIR/dog/x.jpeg, …
// Class names are the sub-folder names in sorted order, and label ids follow that order.
// Each class folder is searched recursively for .png, .jpg and .jpeg files (other files and
// names starting with "." are passed over); files are taken in sorted path order.
//
// Size: without `size`, every image must have the first one's size; with it, each is resized
// (bilinear unless `resize: "nearest"`). Channels: `channels: 1` converts RGB to gray by
// luminance, `channels: 3` gray to RGB by replication; by default a folder of gray images
// (gray PNGs, or files with R = G = B everywhere, as a gray JPEG decodes) gives 1 channel and
// anything else 3. Alpha is dropped.

import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { DataFileError, ToyError, UsageError } from "../../errors.js";
import { readImage, type DecodedImage } from "./decode.js";
import type { ImageSet, ImageSplit, Normalization } from "./imageSet.js";
import { normalizePixels } from "./normalize.js";
import { isGray, resizeImage, toChannels, writePlanar, type ResizeMethod } from "./pixels.js";
import { splitByFraction, standardize } from "./split.js";

export interface ImageSize { height: number; width: number }

export interface ImageFolderOptions {
  /** Resize every image to this (default: all images must already be one size). */
  size?: ImageSize;
  /** How to resize (default "bilinear"). */
  resize?: ResizeMethod;
  /** 1 (gray) or 3 (RGB); default 1 when every image is gray, else 3. */
  channels?: 1 | 3;
}

export interface ImageFolderSplitOptions extends ImageFolderOptions {
  /** The share of each class held out for evaluation (default 0.2). */
  evalFraction?: number;
  /** Seed of the split (default 0). */
  seed?: number;
  /** true (default): standardize with the training split's statistics; false: keep [0, 1];
   * a Normalization: apply that one. */
  normalize?: boolean | Normalization;
}

const IMAGE_FILE = /\.(png|jpe?g)$/i;
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0); // not locale-dependent

/** The class names and each class's image files, in label order. */
export function listImageFolder(dir: string): { classes: string[]; files: string[][] } {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ToyError(`${dir}: no such folder`);
  const classes = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith(".")).map((e) => e.name).sort(byCodeUnits);
  if (classes.length === 0) throw new ToyError(`${dir}: no class folders (expected one sub-folder of images per class)`);
  const files = classes.map((name) => {
    const found = imageFilesUnder(join(dir, name));
    if (found.length === 0) throw new ToyError(`${join(dir, name)}: no .png, .jpg or .jpeg files in this class folder`);
    return found;
  });
  return { classes, files };
}

function imageFilesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (IMAGE_FILE.test(e.name)) out.push(p);
    }
  };
  walk(root);
  return out.sort((a, b) => byCodeUnits(relative(root, a), relative(root, b)));
}

/** Every image of a folder as one set: [N, C·H·W] pixels in [0, 1], labels by class folder. */
export function readImageFolder(dir: string, options: ImageFolderOptions = {}): ImageSet {
  const { classes, files } = listImageFolder(dir);
  const method = options.resize ?? "bilinear";
  checkSize(options.size);
  const images: DecodedImage[] = [], labels: number[] = [];
  let first: string | undefined, gray = true;
  files.forEach((paths, label) => {
    for (const path of paths) {
      let img = readImage(path);
      if (options.size) {
        img = resizeImage(img, options.size.height, options.size.width, method);
      } else if (images.length > 0 && (img.height !== images[0].height || img.width !== images[0].width)) {
        throw new DataFileError(`${path}: image is ${img.height}×${img.width} (height×width), expected ${images[0].height}×${images[0].width} as ${first} (give a size to resize every image)`);
      }
      first ??= path;
      if (gray && !isGray(img)) gray = false;
      images.push(img); labels.push(label);
    }
  });
  const channels = options.channels ?? (gray ? 1 : 3);
  const { height, width } = images[0];
  const size = channels * height * width;
  const pixels = new Float32Array(images.length * size);
  images.forEach((img, i) => writePlanar(toChannels(img, channels), pixels, i * size));
  return { count: images.length, height, width, channels, pixels, labels: Int32Array.from(labels), classes, normalization: null };
}

/** An image folder split into training and evaluation images (seeded, stratified by class). */
export function loadImageFolder(dir: string, options: ImageFolderSplitOptions = {}): ImageSplit {
  const all = readImageFolder(dir, options);
  const evalFraction = options.evalFraction ?? 0.2, seed = options.seed ?? 0;
  const { train, eval: evalSet } = splitByFraction(all, evalFraction, seed);
  return {
    ...standardize(train, evalSet, options.normalize ?? true),
    description: `${dir}: ${all.count} images in ${all.classes.length} classes; ${evalSet.count} (fraction ${evalFraction} of each class, seed ${seed}) held out for evaluation`,
  };
}

/** One image as a model input: [C·H·W], resized, converted, and standardized when `normalization` is given. */
export function loadImage(path: string, options: Required<Pick<ImageFolderOptions, "size" | "channels">> & { resize?: ResizeMethod; normalization?: Normalization | null }): Float32Array {
  checkSize(options.size);
  const { height, width } = options.size;
  const img = toChannels(resizeImage(readImage(path), height, width, options.resize ?? "bilinear"), options.channels);
  const out = new Float32Array(options.channels * height * width);
  writePlanar(img, out, 0);
  if (options.normalization) normalizePixels(out, options.channels, height * width, options.normalization);
  return out;
}

function checkSize(size: ImageSize | undefined): void {
  if (!size) return;
  for (const k of ["height", "width"] as const) {
    if (!(Number.isInteger(size[k]) && size[k] >= 1)) throw new UsageError(`size.${k} ${size[k]}: expected a whole number ≥ 1`);
  }
}
