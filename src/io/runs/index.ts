export { RunBundle, isRunDir, runModelPath, STATE_SCHEMA, type Checkpoint, type CheckpointState } from "./bundle.js";
export { lossCurveSvg, lossCurvesSvg, type CurvePoint, type CurveSeries } from "./lossCurve.js";
export { writeFileAtomic } from "./atomic.js";
export { corpusTokens, dataFormatOf, defaultCorpusPath, readCorpus, DATA_FORMATS, type DataFormat } from "./corpus.js";
export { readTokenFile, TOKEN_WIDTHS, type TokenWidth } from "./tokenFile.js";
export { trainingData, windowBatch, type TokenStream, type TrainingData } from "./windows.js";
