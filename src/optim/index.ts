export { AdamW, type AdamWOptions, type AdamWState } from "./adamw.js";
export { learningRate, type ScheduleKind, type ScheduleOptions } from "./schedule.js";
export { clipGradNorm, clipScale, globalNorm } from "./clip.js";
