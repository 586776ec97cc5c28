export { matmul } from "./matmul.js";
export { embedding } from "./embedding.js";
export { rmsNorm, layerNorm } from "./norm.js";
export { rope, ropeInvFreq, type RopeConfig } from "./rope.js";
export { attention } from "./attention.js";
export { swiglu, geglu, gelu } from "./activation.js";
export { add } from "./arith.js";
export { softmax, logSumExp } from "./softmax.js";
export { scale, softcap } from "./scale.js";
