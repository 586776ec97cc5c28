// vitTiny: a small Vision Transformer with seeded random weights, trained to classify images
// (MNIST by default in `toy train vit`). realize(config, options) then step(batch), as the
// language-model recipes: the initial model is built as an in-memory GGUF (general.architecture
// = vit, the `vit.*` keys of docs/vit.md) and every checkpoint is that file with trained weights.
//   matrices and positions ~ N(0, 0.02²), the patch projection ~ N(0, 1/(C·P·P)) so that a
//   patch token starts at about unit scale; biases 0; LayerNorm gains 1; the class token 0
//   (timm: std 1e-6), so that at first its state is only what attention brings it from the
//   patches. Positions starting as 2-D sine-cosine codes (MAE) were tried: no better on MNIST
//   (95.0% vs 95.6% after 10 epochs; docs/vit.md).

import { loadVisionModel, type VisionModel } from "../archs/vit.js";
import { patchCount, patchSize, VIT_KEYS, vitConfigOf, vitConfigProblem, type VitConfig } from "../archs/vitConfig.js";
import { selectBackend, type Device } from "../backends/index.js";
import { classify, type ClassifyResult } from "../engines/classify.js";
import { DEFAULT_TRAIN_OPTIONS, Trainer, trainKernels, type RunOptions, type StepResult, type TrainOptions } from "../train/trainer.js";
import { Rng } from "../data/rng.js";
import { blockNames, TENSORS, type LayerNames } from "../blocks/tensorNames.js";
import { checkpointSpec, parametersFromFile, writeCheckpoint } from "../train/params.js";
import type { Parameters } from "../train/objectives.js";
import { imageClassification, type ImageBatchInput } from "../train/objectives.js";
import { UsageError } from "../errors.js";
import { GGUFValueType, parseGGUF, type GGUFFile } from "../io/gguf/reader.js";
import { GGMLType } from "../io/gguf/types.js";
import { encodeGGUF, type GGUFMetadataEntry, type GGUFTensorData } from "../io/gguf/writer.js";
import type { ImageSet, Normalization } from "../io/images/imageSet.js";

/** The model's own shape; the image size and class count come from the data. */
export interface VitShape {
  patchSize: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nFF: number;
}

/** Named shapes. `tiny` (the default) reaches 98.5% on MNIST's 2,000 held-out digits in 20 epochs (docs/vit.md). */
export const VIT_CONFIGS: Record<string, VitShape> = {
  nano: { patchSize: 7, nEmbd: 32, nLayer: 2, nHead: 2, nFF: 64 },
  tiny: { patchSize: 7, nEmbd: 64, nLayer: 4, nHead: 4, nFF: 128 },
};
export const DEFAULT_VIT_CONFIG = "tiny";

/** The full config of a named (or given) shape for images like `images`' ones. */
export function vitConfigFor(images: Pick<ImageSet, "channels" | "height" | "width" | "classes">, shape: string | VitShape = DEFAULT_VIT_CONFIG): VitConfig {
  const s = typeof shape === "string" ? VIT_CONFIGS[shape] : shape;
  if (!s) throw new UsageError(`unknown ViT config "${shape}" (known: ${Object.keys(VIT_CONFIGS).join(", ")})`);
  const c: VitConfig = {
    arch: "vit", channels: images.channels, height: images.height, width: images.width, patchSize: s.patchSize,
    nEmbd: s.nEmbd, nLayer: s.nLayer, nHead: s.nHead, headDim: s.nEmbd / s.nHead, nFF: s.nFF,
    nClasses: images.classes.length, normEps: Math.fround(1e-6), // stored as float32
  };
  const problem = vitConfigProblem(c);
  if (problem) throw new UsageError(`ViT config: ${problem}`);
  return c;
}

export interface VitOptions extends RunOptions {
  /** Seed of the initial weights (default: the training seed). */
  initSeed?: number;
  /** Class names by label id (default "0", "1", …), stored in the checkpoints. */
  classes?: string[];
  /** The standardization of the training images, stored in the checkpoints. */
  normalization?: Normalization | null;
  /** Model name (general.name). */
  name?: string;
}

/** The seeded initial ViT as GGUF bytes. */
export function initialVitBytes(c: VitConfig, seed: number, classes: string[], normalization: Normalization | null, name = "toy-vit"): Uint8Array {
  const problem = vitConfigProblem(c);
  if (problem) throw new UsageError(`ViT config: ${problem}`);
  if (classes.length !== c.nClasses) throw new UsageError(`ViT config: ${c.nClasses} classes but ${classes.length} class names`);
  const rng = new Rng(seed), d = c.nEmbd, F = c.nFF, T = patchCount(c) + 1;
  const tensors: GGUFTensorData[] = [];
  const put = (name: string, dims: number[], v: Float32Array) => tensors.push({ name, dims, type: GGMLType.F32, bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) });
  const normal = (name: string, dims: number[], std: number) => put(name, dims, Float32Array.from({ length: dims[0] * (dims[1] ?? 1) }, () => std * rng.normal()));
  const fill = (name: string, n: number, value: number) => put(name, [n], new Float32Array(n).fill(value));
  const linear = (n: LayerNames, nIn: number, nOut: number, std = 0.02) => { normal(n.weight, [nIn, nOut], std); fill(n.bias, nOut, 0); };
  const layerNorm = (n: LayerNames) => { fill(n.weight, d, 1); fill(n.bias, d, 0); };

  linear(TENSORS.patchEmbd, patchSize(c), d, 1 / Math.sqrt(patchSize(c)));
  fill(TENSORS.classEmbd, d, 0);
  normal(TENSORS.positionEmbd, [d, T], 0.02);
  for (let l = 0; l < c.nLayer; l++) {
    const n = blockNames(l);
    layerNorm(n.attnNorm);
    for (const m of [n.attnQ, n.attnK, n.attnV, n.attnOutput]) linear(m, d, d);
    layerNorm(n.ffnNorm);
    linear(n.ffnUp, d, F);
    linear(n.ffnDown, F, d);
  }
  layerNorm(TENSORS.outputNorm);
  linear(TENSORS.output, d, c.nClasses);

  const U32 = GGUFValueType.UINT32, F32 = GGUFValueType.FLOAT32;
  const metadata: GGUFMetadataEntry[] = [
    ["general.architecture", "vit"],
    ["general.name", name],
    ["general.file_type", 0, U32],
    [VIT_KEYS.channels, c.channels, U32],
    [VIT_KEYS.height, c.height, U32],
    [VIT_KEYS.width, c.width, U32],
    [VIT_KEYS.patchSize, c.patchSize, U32],
    [VIT_KEYS.nEmbd, d, U32],
    [VIT_KEYS.nLayer, c.nLayer, U32],
    [VIT_KEYS.nHead, c.nHead, U32],
    [VIT_KEYS.nFF, F, U32],
    [VIT_KEYS.normEps, c.normEps, F32],
    [VIT_KEYS.nClasses, c.nClasses, U32],
    [VIT_KEYS.classNames, classes, GGUFValueType.ARRAY, GGUFValueType.STRING],
  ];
  if (normalization) {
    metadata.push([VIT_KEYS.mean, Float32Array.from(normalization.mean), GGUFValueType.ARRAY, F32]);
    metadata.push([VIT_KEYS.std, Float32Array.from(normalization.std), GGUFValueType.ARRAY, F32]);
  }
  return encodeGGUF({ metadata, tensors });
}

export interface VitRun {
  /** The initial model (metadata and tensor layout of every checkpoint). */
  readonly source: GGUFFile;
  readonly config: VitConfig;
  readonly params: Parameters;
  readonly trainer: Trainer<ImageBatchInput>;
  /** One optimizer step over a batch (or micro-batches). */
  step(batch: ImageBatchInput | readonly ImageBatchInput[]): StepResult;
  /** The current weights as an inference model (archs/vit.ts). */
  model(): VisionModel;
  /** Accuracy, loss and confusion matrix of the current weights on a set. */
  evaluate(set: ImageSet, batchSize?: number): ClassifyResult;
  /** Write the current weights as an F32 GGUF checkpoint. */
  save(path: string): void;
}

/** Train a ViT from a GGUF of one (fresh from initialVitBytes, or a checkpoint). */
function runOf(source: GGUFFile, train: Partial<TrainOptions>, backend: Device | undefined): VitRun {
  const config = vitConfigOf(source);
  const params = parametersFromFile(source);
  const trainer = new Trainer(imageClassification(config), params, { ...DEFAULT_TRAIN_OPTIONS, ...train }, { kernels: trainKernels(backend) });
  // Validation is inference; the webgpu backend has no ViT inference yet, so a run trained there
  // is evaluated on the host's backend (cpu, else ts).
  const device = backend && backend !== "webgpu" ? backend : selectBackend(undefined, { quiet: true });
  const snapshot = () => parseGGUF(encodeGGUF(checkpointSpec(source, params)), source.path);
  const model = () => loadVisionModel(snapshot(), device);
  return {
    source, config, params, trainer, model,
    step: (batch) => trainer.step(batch),
    evaluate: (set, batchSize) => classify(model(), set, batchSize),
    save: (path) => writeCheckpoint(path, source, params),
  };
}

export const vitTiny = {
  name: "vit",
  /** A fresh ViT of `config` (see vitConfigFor). */
  realize(config: VitConfig, options: VitOptions = {}): VitRun {
    const { initSeed, classes, normalization, name, backend, ...train } = options;
    const seed = initSeed ?? train.seed ?? DEFAULT_TRAIN_OPTIONS.seed;
    const names = classes ?? Array.from({ length: config.nClasses }, (_, i) => String(i));
    const source = parseGGUF(initialVitBytes(config, seed, names, normalization ?? null, name), `<${name ?? "toy-vit"}>`);
    return runOf(source, train, backend);
  },
  /** Continue training a ViT checkpoint (a parsed GGUF). */
  resume(source: GGUFFile, options: RunOptions = {}): VitRun {
    const { backend, ...train } = options;
    return runOf(source, train, backend);
  },
};
