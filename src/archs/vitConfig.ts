// The Vision Transformer's configuration and its GGUF form (the `vit.*` metadata keys; see
// docs/vit.md). An image of C×H×W is cut into P×P patches, n = (H/P)(W/P) of them; with the
// class token the encoder sees T = n + 1 rows.

import { ModelFileError } from "../errors.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { Metadata } from "../io/gguf/metadata.js";
import type { Normalization } from "../io/images/imageSet.js";

export interface VitConfig {
  arch: "vit";
  channels: number;
  height: number;
  width: number;
  /** P: the side of a square patch; H and W are multiples of it. */
  patchSize: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  headDim: number;
  /** Hidden width of each block's GELU MLP. */
  nFF: number;
  nClasses: number;
  /** LayerNorm epsilon. */
  normEps: number;
}

/** Patches per image, n = (H/P)·(W/P). */
export const patchCount = (c: VitConfig): number => (c.height / c.patchSize) * (c.width / c.patchSize);
/** Values in one patch, C·P·P. */
export const patchSize = (c: VitConfig): number => c.channels * c.patchSize * c.patchSize;

/** The GGUF metadata keys of a ViT, and what each holds. */
export const VIT_KEYS = {
  channels: "vit.image.channels",
  height: "vit.image.height",
  width: "vit.image.width",
  patchSize: "vit.patch_size",
  nEmbd: "vit.embedding_length",
  nLayer: "vit.block_count",
  nHead: "vit.attention.head_count",
  nFF: "vit.feed_forward_length",
  normEps: "vit.attention.layer_norm_epsilon",
  nClasses: "vit.class_count",
  classNames: "vit.class_names",
  mean: "vit.image.mean",
  std: "vit.image.std",
} as const;

/** Why a config cannot be built, or null. */
export function vitConfigProblem(c: VitConfig): string | null {
  if (c.height % c.patchSize !== 0 || c.width % c.patchSize !== 0) return `the ${c.height}×${c.width} image is not a whole number of ${c.patchSize}×${c.patchSize} patches`;
  if (c.nEmbd % c.nHead !== 0 || c.headDim !== c.nEmbd / c.nHead) return `embedding width ${c.nEmbd} is not ${c.nHead} heads of ${c.headDim}`;
  if (c.nClasses < 2) return `${c.nClasses} classes: a classifier needs at least 2`;
  return null;
}

/** The configuration of a `general.architecture = vit` file. */
export function vitConfigOf(file: GGUFFile): VitConfig {
  const m = new Metadata(file.metadata, file.path);
  const nEmbd = m.count(VIT_KEYS.nEmbd), nHead = m.count(VIT_KEYS.nHead);
  if (nHead === 0) throw new ModelFileError(`${file.path}: metadata ${VIT_KEYS.nHead} is 0`);
  const c: VitConfig = {
    arch: "vit",
    channels: m.count(VIT_KEYS.channels, undefined, 4),
    height: m.count(VIT_KEYS.height, undefined, 1 << 16),
    width: m.count(VIT_KEYS.width, undefined, 1 << 16),
    patchSize: m.count(VIT_KEYS.patchSize, undefined, 1 << 16),
    nEmbd,
    nLayer: m.count(VIT_KEYS.nLayer, undefined, 4096),
    nHead, headDim: Math.floor(nEmbd / nHead),
    nFF: m.count(VIT_KEYS.nFF),
    nClasses: m.count(VIT_KEYS.nClasses),
    normEps: m.number(VIT_KEYS.normEps, 1e-6),
  };
  if (c.channels === 0 || c.patchSize === 0) throw new ModelFileError(`${file.path}: ${VIT_KEYS.channels} and ${VIT_KEYS.patchSize} must be positive`);
  const problem = vitConfigProblem(c);
  if (problem) throw new ModelFileError(`${file.path}: ${problem}`);
  return c;
}

/** What a ViT file says about its inputs and outputs beyond the config: class names and the
 *  pixel standardization its training data had (apply it to new images). */
export function vitLabelsOf(file: GGUFFile, c: VitConfig): { classes: string[]; normalization: Normalization | null } {
  const m = new Metadata(file.metadata, file.path);
  const classes = m.strings(VIT_KEYS.classNames) ?? Array.from({ length: c.nClasses }, (_, i) => String(i));
  if (classes.length !== c.nClasses) throw new ModelFileError(`${file.path}: ${VIT_KEYS.classNames} has ${classes.length} names, ${VIT_KEYS.nClasses} is ${c.nClasses}`);
  const mean = m.numbers(VIT_KEYS.mean), std = m.numbers(VIT_KEYS.std);
  if (!mean || !std) return { classes, normalization: null };
  if (mean.length !== c.channels || std.length !== c.channels) {
    throw new ModelFileError(`${file.path}: ${VIT_KEYS.mean} and ${VIT_KEYS.std} need ${c.channels} values each, found ${mean.length} and ${std.length}`);
  }
  return { classes, normalization: { mean: Array.from(mean), std: Array.from(std) } };
}
