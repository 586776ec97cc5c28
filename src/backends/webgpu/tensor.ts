// An activation on the GPU: a shape and the storage buffer holding its float32 values
// (row-major). Its values never come to the host during a forward: `data` refuses.

import { ToyError } from "../../errors.js";

/** Satisfies blocks/ops.ts Value (the forward code reads shape, rows, cols). */
export class GpuTensor {
  constructor(readonly shape: readonly number[], readonly buffer: GPUBuffer) {}

  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }
  get cols(): number {
    return this.shape[this.shape.length - 1];
  }
  get rows(): number {
    return this.size / this.cols;
  }
  get data(): Float32Array {
    throw new ToyError("webgpu: this forward reads an activation's values on the host mid-forward, which the webgpu backend does not do (its values stay on the GPU)");
  }
}
