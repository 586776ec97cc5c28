export { warmStart, type RealizedRun } from "./warmStart.js";
export { fromScratch, SCRATCH_CONFIGS, DEFAULT_SCRATCH_CONFIG, scratchConfig, byteVocabulary, type ScratchOptions, type ScratchShape } from "./fromScratch.js";
export { lora, DEFAULT_LORA_TARGETS, type LoraOptions, type LoraRun } from "./lora.js";
export { applyLoraAdapter, readLoraAdapter, writeLoraAdapter, mergeLowRank, loraScale, type LoraAdapter, type LoraMatrix } from "./loraAdapter.js";
export { vitTiny, vitConfigFor, VIT_CONFIGS, DEFAULT_VIT_CONFIG, initialVitBytes, type VitRun, type VitOptions, type VitShape } from "./vitTiny.js";
export { trainLanguageModel, languageModelJob, idsBatch, LANGUAGE_MODEL_DEFAULTS, DEFAULT_JOB_SCRATCH_CONFIG, LORA_JOB_DEFAULTS, type LanguageModelJob, type LanguageModelJobOptions, type LanguageModelRecipe, type LanguageModelSpec, type RecipeDefaults } from "./languageModelJob.js";
export { trainVit, vitJob, VIT_DEFAULTS, type VitJob, type VitJobOptions, type VitSpec } from "./vitJob.js";
export { resumeTraining, type RecordedJob } from "./resumeJob.js";
export { DEFAULT_RUNS_DIR, type JobCommon, type JobOutput, type JobResult } from "./jobCommon.js";
