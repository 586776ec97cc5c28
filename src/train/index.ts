// Training: the objectives (an architecture's own forward on the tape, and its loss), the
// Trainer (one optimizer step), its state (resume), events, float32 parameters from a GGUF, and
// the run loop `toy train` runs.
export { lossAndGradients, trainingForward, nextToken, vitTrainingForward, imageClassification, type Objective, type LossAndGradients, type ImageBatchInput } from "./objectives.js";
export { Trainer, DEFAULT_TRAIN_OPTIONS, trainKernels, type TrainOptions, type RunOptions, type StepResult } from "./trainer.js";
export { parametersFromFile, writeCheckpoint, checkpointSpec } from "./params.js";
export { saveTrainingState, restoreTrainingState } from "./state.js";
export { EventLog, EVENT_SCHEMA, type RunEvent } from "./events.js";
export { runLoop, toyVersion, type LoopSetup, type LoopOutput } from "./loop.js";
