// The loops of training, per backend: the products of linear layers and attention, and the
// O(tokens · d) ops around them (norms, RoPE, gated activations, the cross-entropy, residual
// sums) forward and backward, and the optimizer's sweeps over all parameters. The
// differentiable ops (../ops) own the math and the tape; they hand these kernels plain arrays.
// `ts` is the reference (float64 sums); `cpu` runs the native GEMM and attention
// (native/gemm.c, native/attention_train.c), float32 with FMA, and native/train_ops.c; `webgpu`
// runs WGSL kernels (backends/webgpu/train/) on a device owned by a worker thread (./webgpu.ts).
// Gradients are added into the arrays given (null: not wanted). `out`, where a kernel takes one,
// is where it writes its result (every value; any contents before): the tape's reused buffers.

import type { AttentionOptions, Device, RopeStyle } from "../../backends/kernels.js";
import { BackendError } from "../../errors.js";
import { cpuBackend } from "../../backends/index.js";
import { cpuTrainKernels } from "./cpu.js";
import { tsTrainKernels } from "./ts.js";
import { webgpuTrainKernels } from "./webgpu.js";

export interface AttentionShape {
  /** Sequences in the batch, and rows per sequence. */
  batch: number;
  seq: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

export interface RopeShape {
  heads: number;
  headDim: number;
  /** The leading dims of each head that turn (the rest pass through). */
  dims: number;
  style: RopeStyle;
}

/** The activation of a gated feed-forward: SiLU (SwiGLU) or GELU, tanh approximation (GeGLU). */
export type GateActivation = "silu" | "gelu";

/** The constants of one AdamW step (src/optim/adamw.ts):
 *  θ ← θ · decay − stepSize · m / (√v / bc2 + eps), after m, v take in the gradient. */
export interface AdamWStep {
  b1: number;
  b2: number;
  eps: number;
  decay: number;
  stepSize: number;
  bc2: number;
  /** The gradient is taken as float32(g · gradScale): global-norm clipping folded into the
   *  update, which saves a read and a write of every gradient (default 1: as it is). */
  gradScale?: number;
}

export interface TrainKernels {
  readonly device: Device;
  /** y [N, nOut] = x [N, nIn] · Wᵀ, W: [nOut, nIn]. */
  linear(x: Float32Array, w: Float32Array, N: number, nIn: number, nOut: number, out?: Float32Array): Float32Array;
  /** dx [N, nIn] += ∂y W;  dw [nOut, nIn] += ∂yᵀ x  (null: not wanted). */
  linearBackward(dy: Float32Array, x: Float32Array, w: Float32Array, N: number, nIn: number, nOut: number, dx: Float32Array | null, dw: Float32Array | null): void;
  /** Attention over q [B·T, H, D], k, v [B·T, KV, D] → out [B·T, H·D], and the softmax kept for the backward
   *  (float32 in `scratch(n)` where the backend keeps float32: the tape's reused buffers). */
  attention(q: Float32Array, k: Float32Array, v: Float32Array, s: AttentionShape, opts: AttentionOptions, out?: Float32Array,
    scratch?: (n: number) => Float32Array): { out: Float32Array; probs: Float32Array | Float64Array };
  /** dq, dk, dv += attention's gradients at ∂out = dy. */
  attentionBackward(dy: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array, probs: Float32Array | Float64Array,
    s: AttentionShape, opts: AttentionOptions, dq: Float32Array, dk: Float32Array, dv: Float32Array): void;

  /** RMSNorm of each row of n: y = x · r ⊙ g, r = 1/√(mean(x²) + ε). */
  rmsNorm(x: Float32Array, g: Float32Array, rows: number, n: number, eps: number, out?: Float32Array): Float32Array;
  /** dx += r (∂y ⊙ g) − x r³ mean(∂y ⊙ g ⊙ x),  dg += Σ_rows ∂y ⊙ x r  (r recomputed from x). */
  rmsNormBackward(dy: Float32Array, x: Float32Array, g: Float32Array, rows: number, n: number, eps: number, dx: Float32Array | null, dg: Float32Array | null): void;
  /** x [N, heads, headDim] rotated by θ = positions[t] · invFreq[i] (a copy). */
  rope(x: Float32Array, positions: Int32Array, invFreq: Float32Array, s: RopeShape, out?: Float32Array): Float32Array;
  /** dx += the inverse rotation of ∂y;  dinv[i] += Σ p (−∂y_a y_b + ∂y_b y_a), from the forward's output y. */
  ropeBackward(dy: Float32Array, y: Float32Array, positions: Int32Array, invFreq: Float32Array, s: RopeShape, dx: Float32Array | null, dinv: Float32Array | null): void;
  /** act(gate) ⊙ up. */
  gated(gate: Float32Array, up: Float32Array, act: GateActivation, out?: Float32Array): Float32Array;
  /** dgate += act'(gate) up ∂y,  dup += act(gate) ∂y. */
  gatedBackward(dy: Float32Array, gate: Float32Array, up: Float32Array, act: GateActivation, dgate: Float32Array | null, dup: Float32Array | null): void;
  /** Over rows of V logits whose target is not `ignore` (targets already checked):
   *  lse[t] = log Σ exp z_t, and total = Σ (lse[t] − z_t[target_t]). */
  crossEntropy(logits: Float32Array, targets: Int32Array, V: number, ignore: number): { total: number; lse: Float64Array };
  /** dz_t += g (softmax(z_t) − onehot(target_t)) for those rows. */
  crossEntropyBackward(logits: Float32Array, targets: Int32Array, lse: Float64Array, V: number, ignore: number, g: number, dz: Float32Array): void;
  /** a + b. */
  add(a: Float32Array, b: Float32Array, out?: Float32Array): Float32Array;
  /** dst += src. */
  accumulate(dst: Float32Array, src: Float32Array): void;
  /** Σ x², in float64. */
  sumOfSquares(x: Float32Array): number;
  /** x ← s · x, in place. */
  scale(x: Float32Array, s: number): void;
  /** One AdamW update of θ, m, v in place from the gradient g. */
  adamw(theta: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, h: AdamWStep): void;
}

export { tsTrainKernels };

/** The training kernels of a backend (an error, exit 4, when the cpu backend did not build or no
 *  WebGPU adapter is found). */
export function trainKernelsFor(device: Device): TrainKernels {
  if (device === "ts") return tsTrainKernels;
  if (device === "cpu") {
    const cpu = cpuBackend();
    if ("error" in cpu) throw new BackendError(`the cpu backend is not available: ${cpu.error}`);
    return cpuTrainKernels(cpu.addon);
  }
  if (device === "webgpu") return webgpuTrainKernels();
  throw new BackendError(`training on backend ${device} is not available in this build`);
}
