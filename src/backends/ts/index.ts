// The `ts` backend: pure TypeScript, the readable reference every other backend is held to.

import type { Kernels } from "../kernels.js";
import { attention } from "./attention.js";
import { add, gelu, geglu, scale, softmax, swiglu } from "./elementwise.js";
import { getRows, matmul } from "./matmul.js";
import { layerNorm, rmsNorm } from "./norms.js";
import { rope } from "./rope.js";
import { storeKV } from "./storeKV.js";

export const tsKernels: Kernels = {
  device: "ts",
  matmul, getRows, rmsNorm, layerNorm, rope, attention, storeKV, swiglu, geglu, gelu, add, scale, softmax,
};
