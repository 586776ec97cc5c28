// The library: `import { … } from "toy"`. The whole compute surface, layer by layer
// (docs/framework.md walks through it), and every type it is written in.

// Tensors and stored weights.
export { Tensor } from "./tensor/tensor.js";
export { weightFromInfo, describeWeight, sliceWeightRows, type Weight } from "./tensor/weight.js";

// Primitives: the operations, dispatched to the backend a tensor lives on.
export {
  matmul, embedding, rmsNorm, layerNorm, rope, ropeInvFreq, attention, swiglu, geglu, gelu,
  add, softmax, logSumExp, scale, softcap, gatherRows, type RopeConfig,
} from "./primitives/index.js";

// Blocks: layers written once against Ops (weights by GGUF name), run for inference (Tensors,
// KV cache) or training (Vars on the tape).
export type { Ops, Value, RopeSpec, Routes } from "./blocks/ops.js";
export { InferenceOps, RopeTables, type StoredWeights } from "./blocks/inferenceOps.js";
export { TrainingOps, ParamVars, type Parameters, type Adapter, type TrainSetup, type SequenceBatch } from "./blocks/trainingOps.js";
export { TENSORS, blockNames, BLOCK_MATRICES, type BlockNames, type LayerNames } from "./blocks/tensorNames.js";
export { norm, type NormConfig } from "./blocks/norm.js";
export { selfAttention, attendThroughCache, type AttentionConfig } from "./blocks/selfAttention.js";
export { feedForward, type FeedForwardKind, type FeedForwardNames } from "./blocks/feedForward.js";
export { mixtureOfExperts, route } from "./blocks/mixtureOfExperts.js";
export { transformerBlock, type BlockConfig } from "./blocks/transformerBlock.js";
export { KVCache, LayerCache, type KVCacheOptions, type Segment } from "./blocks/kvCache.js";
export { KV_TYPES, type KVType } from "./blocks/kvCacheTypes.js";

// Architectures: a config read from GGUF metadata and a one-screen forward.
export {
  ARCHITECTURES, registerArchitecture, supportedArchitectures, architectureOf,
  configOf, loadModel, loadModelFromFile, architectureFor, forwardFor, tensorsFor,
} from "./archs/index.js";
export { buildModel, forwardOf, type Architecture, type Forward, type LanguageModel, type ModelOptions } from "./archs/model.js";
export { baseConfig, ropeConfig, type ModelConfig } from "./archs/config.js";
export { attentionConfig, blockConfig, blockConfigs, decoderTensors, type TensorSpec } from "./archs/layers.js";
export { ModelWeights, toFloat32 } from "./archs/weights.js";
export { llama, decoderForward, llamaLikeConfig } from "./archs/llama.js";
export { qwen2, qwen3 } from "./archs/qwen.js";
export { gemma2 } from "./archs/gemma2.js";
export { olmoe } from "./archs/olmoe.js";
export { gpt2 } from "./archs/gpt2.js";
// The Vision Transformer (docs/vit.md): an image classifier, not a LanguageModel.
export { vitForward, vitTensors, vitBlockConfig, loadVisionModel, patchify, type VisionModel } from "./archs/vit.js";
export { vitConfigOf, vitLabelsOf, vitConfigProblem, patchCount, VIT_KEYS, type VitConfig } from "./archs/vitConfig.js";

// Engines: decoding with a KV cache, sampling, scoring.
export {
  generate, generateAsync, Generation,
  type GenerateOptions, type GenerateResult, type FinishReason, type TokenFilter,
} from "./engines/generate.js";
export { Sampler, DEFAULT_SAMPLING, argmax, topIds, adjustLogits, type SamplingOptions } from "./engines/sampling.js";
export {
  structuredOutput, formatGbnf, schemaToGbnf, jsonObjectGbnf, parseGbnf, printGbnf, GrammarConstraint, TokenGrammar, tokenGrammar,
  type OutputFormat, type Grammar,
} from "./engines/grammar/index.js";
export { scoreTokens, scoreWindows, scoreTokensAsync, scoreWindowsAsync, type Scores, type ScoreOptions, type PositionScore } from "./engines/evaluate.js";
export { Rng } from "./data/rng.js";

// Backends.
export { selectBackend, prepareBackend, kernelsFor, cpuBackend, tsKernels, type Device, type Kernels } from "./backends/index.js";
export type { AttentionOptions, RopeStyle } from "./backends/kernels.js";

// io: GGUF, tokenizers, chat templates, finding models.
export {
  readGGUF, readGGUFHeader, parseGGUF, GGUFValueType,
  type GGUFFile, type GGUFHeader, type GGUFTensorInfo, type GGUFValue,
} from "./io/gguf/reader.js";
export {
  writeGGUF, encodeGGUF,
  type GGUFWriteSpec, type GGUFTensorData, type GGUFMetadataEntry,
} from "./io/gguf/writer.js";
export { GGMLType, typeName, typeByName, byteSize, TYPE_TRAITS } from "./io/gguf/types.js";
export { Metadata } from "./io/gguf/metadata.js";
export { tokenizerFromMetadata, type Tokenizer, type EncodeOptions, type DecodeOptions } from "./io/tokenizer/index.js";
export { chatTemplateFor, ChatTemplate, parseMessages, type ChatMessage } from "./io/chat/template.js";
export { listModels, resolveModelName, type ModelEntry, type Listing } from "./io/discovery/index.js";
export { resolveModelPath, defaultModelPath } from "./io/discovery/modelNames.js";

// io: images — IDX (MNIST) and PNG/JPEG class folders, standardization, seeded batches (docs/images.md).
export {
  readIdx, parseIdx, encodeIdx, IDX_TYPES,
  loadMnistDir, loadMnistPair, findMnistFiles, MNIST_FILE, loadImageData,
  loadImageFolder, readImageFolder, listImageFolder, loadImage, readImage, decodeImage,
  isGray, toChannels, resizeImage,
  computeNormalization, normalize, normalizePixels, splitByFraction, standardize,
  imageSize, sliceImages, selectImages, classCounts,
  ImageBatches, batchesInOrder, randomTranslate, shuffled, seedFor,
  type IdxFile, type IdxArray, type IdxTypeCode, type ImageSet, type ImageSplit, type Normalization,
  type MnistOptions, type ImageDataOptions, type MnistFiles, type MnistPair, type ImageFolderOptions, type ImageFolderSplitOptions,
  type ImageSize, type DecodedImage, type ResizeMethod, type Augmentation,
  type BatchOptions, type BatchState, type ImageBatch,
} from "./io/images/index.js";

// Storage types.
export {
  quantize, dequantize, quantizeRow, dequantizeRow, quantizer, dequantizer, blockSize, rowBytes,
  QUANTIZABLE_TYPES, DEQUANTIZABLE_TYPES, type RowQuantizer, type RowDequantizer,
} from "./quant/index.js";

// Training: the tape and its differentiable ops (a namespace: their names are the primitives'),
// the sequence engine's forward + backward, AdamW and schedules, the recipes.
export * as autograd from "./autograd/index.js";
export { Tape, Var } from "./autograd/tape.js";
export {
  lossAndGradients, trainingForward, vitTrainingForward, imageClassification, nextToken, Trainer, DEFAULT_TRAIN_OPTIONS,
  parametersFromFile, writeCheckpoint, saveTrainingState, restoreTrainingState, EventLog, EVENT_SCHEMA, runLoop,
  type LossAndGradients, type Objective, type ImageBatchInput, type TrainOptions, type RunOptions, type StepResult,
  type RunEvent, type LoopSetup, type LoopOutput,
} from "./train/index.js";
export type { Batch } from "./data/batch.js";
export { classify, formatConfusion, type ClassifyResult } from "./engines/classify.js";
export { AdamW, learningRate, clipGradNorm, clipScale, globalNorm, type AdamWOptions, type ScheduleKind, type ScheduleOptions } from "./optim/index.js";
export {
  warmStart, fromScratch, lora, SCRATCH_CONFIGS, DEFAULT_SCRATCH_CONFIG, scratchConfig, DEFAULT_LORA_TARGETS,
  applyLoraAdapter, readLoraAdapter, writeLoraAdapter,
  type RealizedRun, type ScratchOptions, type ScratchShape, type LoraOptions, type LoraRun, type LoraAdapter,
} from "./recipes/index.js";
// Training jobs: what `toy train` runs — a recipe, its data, a run bundle, the loop — and resume.
export {
  trainLanguageModel, trainVit, resumeTraining, languageModelJob, vitJob, idsBatch,
  LANGUAGE_MODEL_DEFAULTS, VIT_DEFAULTS, DEFAULT_JOB_SCRATCH_CONFIG, LORA_JOB_DEFAULTS, DEFAULT_RUNS_DIR,
  type LanguageModelJob, type LanguageModelJobOptions, type LanguageModelRecipe, type VitJob, type VitJobOptions,
  type JobCommon, type JobOutput, type JobResult, type RecordedJob,
} from "./recipes/index.js";
export {
  vitTiny, vitConfigFor, VIT_CONFIGS, DEFAULT_VIT_CONFIG, initialVitBytes,
  type VitRun, type VitOptions, type VitShape,
} from "./recipes/vitTiny.js";

// io: training data and run records — the corpus shipped with toy, seeded windows with a held-out
// tail, run bundles, loss-curve pictures of one run or several.
export {
  defaultCorpusPath, readCorpus, corpusTokens, trainingData, windowBatch,
  RunBundle, lossCurveSvg, lossCurvesSvg,
  type TrainingData, type TokenStream, type CurvePoint, type CurveSeries,
} from "./io/runs/index.js";

// Algorithm cards.
export { renderCard, parseCard, readCard, canonicalConfig, renderVitCard, readVitCard, type CardMeta, type ParsedCard } from "./card/index.js";

// Errors and the exit codes they map to.
export { EXIT, ToyError, UsageError, ModelFileError, BackendError, DataFileError } from "./errors.js";
