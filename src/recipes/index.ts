export { warmStart, type RealizedRun } from "./warmStart.js";
export { fromScratch, SCRATCH_CONFIGS, DEFAULT_SCRATCH_CONFIG, scratchConfig, byteVocabulary, type ScratchOptions, type ScratchShape } from "./fromScratch.js";
export { lora, DEFAULT_LORA_TARGETS, type LoraOptions, type LoraRun } from "./lora.js";
export { applyLoraAdapter, readLoraAdapter, writeLoraAdapter, mergeLowRank, loraScale, type LoraAdapter, type LoraMatrix } from "./loraAdapter.js";
export { vitTiny, vitConfigFor, VIT_CONFIGS, DEFAULT_VIT_CONFIG, initialVitBytes, type VitRun, type VitOptions, type VitShape } from "./vitTiny.js";
