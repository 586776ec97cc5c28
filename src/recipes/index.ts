export { warmStart, type RealizedRun } from "./warmStart.js";
export { fromScratch, SCRATCH_CONFIGS, DEFAULT_SCRATCH_CONFIG, scratchConfig, byteVocabulary, type ScratchOptions, type ScratchShape } from "./fromScratch.js";
export { lora, applyLoraAdapter, readLoraAdapter, mergeLowRank, loraScale, DEFAULT_LORA_TARGETS, type LoraOptions, type LoraRun, type LoraAdapter } from "./lora.js";
