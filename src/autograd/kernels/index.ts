// The heavy half of training, per backend: the products of linear layers and attention, forward
// and backward. The differentiable ops (../ops) own the math and the tape; they hand these
// kernels plain float32 arrays. `ts` is the reference (float64 sums); `cpu` runs the native
// GEMM and attention (native/gemm.c, native/attention_train.c), float32 with FMA.

import type { AttentionOptions, Device } from "../../backends/kernels.js";
import { BackendError } from "../../errors.js";
import { cpuBackend } from "../../backends/index.js";
import { cpuTrainKernels } from "./cpu.js";
import { tsTrainKernels } from "./ts.js";

export interface AttentionShape {
  /** Sequences in the batch, and rows per sequence. */
  batch: number;
  seq: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

export interface TrainKernels {
  readonly device: Device;
  /** y [N, nOut] = x [N, nIn] · Wᵀ, W: [nOut, nIn]. */
  linear(x: Float32Array, w: Float32Array, N: number, nIn: number, nOut: number): Float32Array;
  /** dx [N, nIn] += ∂y W;  dw [nOut, nIn] += ∂yᵀ x  (null: not wanted). */
  linearBackward(dy: Float32Array, x: Float32Array, w: Float32Array, N: number, nIn: number, nOut: number, dx: Float32Array | null, dw: Float32Array | null): void;
  /** Attention over q [B·T, H, D], k, v [B·T, KV, D] → out [B·T, H·D], and the softmax kept for the backward. */
  attention(q: Float32Array, k: Float32Array, v: Float32Array, s: AttentionShape, opts: AttentionOptions): { out: Float32Array; probs: Float32Array | Float64Array };
  /** dq, dk, dv += attention's gradients at ∂out = dy. */
  attentionBackward(dy: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array, probs: Float32Array | Float64Array,
    s: AttentionShape, opts: AttentionOptions, dq: Float32Array, dk: Float32Array, dv: Float32Array): void;
}

export { tsTrainKernels };

/** The training kernels of a backend (an error, exit 4, when the cpu backend did not build). */
export function trainKernelsFor(device: Device): TrainKernels {
  if (device === "ts") return tsTrainKernels;
  if (device === "cpu") {
    const cpu = cpuBackend();
    if ("error" in cpu) throw new BackendError(`the cpu backend is not available: ${cpu.error}`);
    return cpuTrainKernels(cpu.addon);
  }
  throw new BackendError(`training on backend ${device} is not available in this build`);
}
