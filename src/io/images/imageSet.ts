// A labelled set of same-sized images, the unit every image loader returns and the batch
// iterator reads. Pixels are float32, one image after another, each image channel-major
// (C, H, W: PyTorch's layout), values scaled to [0, 1] and, when `normalization` is set, then
// standardized per channel: x' = (x − mean[c]) / std[c].

export interface Normalization {
  /** Per-channel mean and standard deviation of the [0, 1] pixels, from the training split. */
  mean: number[];
  std: number[];
}

export interface ImageSet {
  /** N, the number of images. */
  count: number;
  height: number;
  width: number;
  /** C: 1 (grayscale) or 3 (RGB). */
  channels: number;
  /** [N, C·H·W] */
  pixels: Float32Array;
  /** [N], each in 0 … classes.length − 1 */
  labels: Int32Array;
  /** The name of each label id (MNIST: "0" … "9"; an image folder: its sub-folder names). */
  classes: string[];
  /** How `pixels` were standardized; null while they are still in [0, 1]. */
  normalization: Normalization | null;
}

/** A training split and an evaluation split of the same images, standardized alike. */
export interface ImageSplit {
  train: ImageSet;
  eval: ImageSet;
  /** Computed from `train` only and applied to both (null when normalization was turned off). */
  normalization: Normalization | null;
  /** Where the two splits came from, in words (for run_start events and logs). */
  description: string;
}

/** C·H·W, the floats of one image. */
export const imageSize = (s: Pick<ImageSet, "height" | "width" | "channels">): number => s.channels * s.height * s.width;

/** Images `start` … `end − 1` of a set (a copy). */
export function sliceImages(set: ImageSet, start: number, end: number): ImageSet {
  const size = imageSize(set);
  return {
    ...set, count: end - start,
    pixels: set.pixels.slice(start * size, end * size),
    labels: set.labels.slice(start, end),
  };
}

/** The images at `indices`, in that order (a copy). */
export function selectImages(set: ImageSet, indices: ArrayLike<number>): ImageSet {
  const size = imageSize(set);
  const pixels = new Float32Array(indices.length * size), labels = new Int32Array(indices.length);
  for (let i = 0; i < indices.length; i++) {
    const j = indices[i];
    pixels.set(set.pixels.subarray(j * size, (j + 1) * size), i * size);
    labels[i] = set.labels[j];
  }
  return { ...set, count: indices.length, pixels, labels };
}

/** How many images carry each label: [classes.length]. */
export function classCounts(set: ImageSet): number[] {
  const counts = new Array<number>(set.classes.length).fill(0);
  for (const l of set.labels) counts[l]++;
  return counts;
}
