// A tensor: a float32 array with a shape and the device whose kernels compute on it.
// Row-major; the last dimension is contiguous.

import type { Device } from "../backends/kernels.js";
import { scratch, zeros } from "./workspace.js";

export class Tensor {
  constructor(
    readonly shape: readonly number[],
    readonly data: Float32Array,
    readonly device: Device = "ts",
  ) {
    const n = shape.reduce((a, b) => a * b, 1);
    if (n !== data.length) throw new RangeError(`shape [${shape.join(", ")}] needs ${n} values, got ${data.length}`);
  }

  /** Zeros; inside a forward that reuses a workspace, in one of its arrays (./workspace.ts). */
  static zeros(shape: readonly number[], device: Device = "ts"): Tensor {
    return new Tensor(shape, zeros(shape.reduce((a, b) => a * b, 1)), device);
  }

  get size(): number {
    return this.data.length;
  }

  /** The last dimension: the length of one row. */
  get cols(): number {
    return this.shape[this.shape.length - 1];
  }

  /** Number of rows: the product of all dims but the last. */
  get rows(): number {
    return this.data.length / this.cols;
  }

  /** Same data, another shape (no copy). */
  reshape(shape: readonly number[]): Tensor {
    return new Tensor(shape, this.data, this.device);
  }

  /** Entries [from, to) along the first dimension (no copy). */
  sliceRows(from: number, to: number): Tensor {
    const stride = this.data.length / this.shape[0];
    return new Tensor([to - from, ...this.shape.slice(1)], this.data.subarray(from * stride, to * stride), this.device);
  }

  /** A tensor of the same shape and device, zero-filled. */
  like(shape: readonly number[] = this.shape): Tensor {
    return Tensor.zeros(shape, this.device);
  }

  /** A tensor of the same shape and device for a kernel that writes every value of it: inside a
   *  forward's workspace its values are what the array last held, not zeros. */
  output(shape: readonly number[] = this.shape): Tensor {
    return new Tensor(shape, scratch(shape.reduce((a, b) => a * b, 1)), this.device);
  }
}
