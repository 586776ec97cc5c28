export { RunBundle, isRunDir, runModelPath, STATE_SCHEMA, type Checkpoint, type CheckpointState } from "./bundle.js";
export { lossCurveSvg, type CurvePoint } from "./lossCurve.js";
export { writeFileAtomic } from "./atomic.js";
export { defaultCorpusPath, readCorpus } from "./corpus.js";
