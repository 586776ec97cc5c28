// Image data: IDX (MNIST) and PNG/JPEG folders as labelled float sets, per-channel
// standardization from the training split, seeded batches with an exact resume position, and
// random-translation augmentation. docs/images.md describes the formats and defaults.

export { readIdx, parseIdx, encodeIdx, IDX_TYPES, MAX_IDX_BYTES, type IdxFile, type IdxArray, type IdxTypeCode } from "./idx.js";
export { imageSize, sliceImages, selectImages, classCounts, type ImageSet, type ImageSplit, type Normalization } from "./imageSet.js";
export { computeNormalization, normalize, normalizePixels, normalizedZero } from "./normalize.js";
export { splitByFraction, standardize } from "./split.js";
export { loadImageData, type ImageDataOptions } from "./dataset.js";
export { loadMnistDir, loadMnistPair, findMnistFiles, MNIST_FILE, type MnistOptions, type MnistFiles, type MnistPair } from "./mnist.js";
export { readImage, decodeImage, type DecodedImage } from "./decode.js";
export { isGray, toChannels, resizeImage, writePlanar, type ResizeMethod } from "./pixels.js";
export {
  loadImageFolder, readImageFolder, listImageFolder, loadImage,
  type ImageFolderOptions, type ImageFolderSplitOptions, type ImageSize,
} from "./folder.js";
export { shuffled, seedFor, STREAM } from "./shuffle.js";
export { randomTranslate, type Augmentation } from "./augment.js";
export { ImageBatches, batchesInOrder, type BatchOptions, type BatchState, type ImageBatch } from "./batches.js";
