// Reverse-mode automatic differentiation: a tape of values, each remembering how to pass its
// gradient back to the values it was computed from. The inference path never touches this;
// training builds a tape by calling the differentiable ops in ./ops on Vars.

import type { TrainKernels } from "./kernels/index.js";
import { tsTrainKernels } from "./kernels/ts.js";

/** A value on a tape: data (row-major, float32), its shape, and ∂loss/∂value once known. */
export class Var {
  /** ∂loss/∂value, allocated on first use. */
  grad: Float32Array | null = null;
  /** Passes this.grad on to the inputs' grads (set by the op that made this Var). */
  backward: (() => void) | null = null;
  /** A leaf's gradient goes here (zeroed on first use) instead of into fresh memory: a buffer
   *  its caller keeps from one step to the next (Tape.param). */
  gradInto: Float32Array | null = null;

  constructor(
    readonly tape: Tape,
    readonly shape: readonly number[],
    readonly data: Float32Array,
    /** Whether gradients flow into this value (parameters and everything computed from them). */
    readonly requiresGrad: boolean,
  ) {
    const n = shape.reduce((a, b) => a * b, 1);
    if (n !== data.length) throw new RangeError(`Var: shape [${shape.join(", ")}] needs ${n} values, got ${data.length}`);
  }

  get size(): number { return this.data.length; }
  get cols(): number { return this.shape[this.shape.length - 1]; }
  get rows(): number { return this.data.length / this.cols; }

  /** The gradient buffer, created as zeros when first written. */
  gradBuffer(): Float32Array {
    if (this.grad) return this.grad;
    if (this.gradInto) return (this.grad = this.gradInto.fill(0));
    return (this.grad = this.backward ? this.tape.scratchZeros(this.data.length) : new Float32Array(this.data.length));
  }
}

/** Buffers of op outputs (values and gradients) kept from one tape to the next, by length: a
 *  training step needs the same ones every time, and fresh memory costs a page fault per 4 KiB
 *  on first touch. The spares hold at most what the largest tape used (its peak is reached
 *  anyway: a SmolLM2-135M step of 4 × 256 tokens uses ~3 GB of them), or SPARE_LIMIT when that
 *  is more: a fixed cap of 1 GiB dropped two thirds of SmolLM2's buffers every step, and the page
 *  faults of the fresh ones cost ~1 s per step. */
const spare = new Map<number, Float32Array[]>();
const SPARE_LIMIT = 1 << 28; // floats kept at least (1 GiB)
let spareFloats = 0;
let largestTape = 0;

/** The record of one forward computation, replayed backwards by `backward(loss)`. */
export class Tape {
  private readonly nodes: Var[] = [];
  private readonly scratch_: Float32Array[] = [];

  /** `kernels`: the backend that runs the ops' heavy products (the ts reference by default). */
  constructor(readonly kernels: TrainKernels = tsTrainKernels) {}

  /** A trainable leaf (its grad is what training reads). `gradInto`: where its gradient goes
   *  (zeroed first; a buffer of data.length kept across steps), else fresh zeros. Fresh memory
   *  for every parameter's gradient every step costs a page fault per 4 KiB on first write. */
  param(data: Float32Array, shape: readonly number[], gradInto?: Float32Array): Var {
    const v = new Var(this, shape, data, true);
    if (gradInto) {
      if (gradInto.length !== data.length) throw new RangeError(`param: a gradient buffer of ${gradInto.length} values for ${data.length}`);
      v.gradInto = gradInto;
    }
    return v;
  }

  /** A constant leaf (no gradient). */
  constant(data: Float32Array, shape: readonly number[]): Var {
    return new Var(this, shape, data, false);
  }

  /**
   * The result of an op over `inputs`. `backward(out)` reads out.grad and adds into the inputs'
   * gradBuffer(); it runs only if some input needs a gradient.
   */
  record(shape: readonly number[], data: Float32Array, inputs: readonly (Var | null | undefined)[], backward: (out: Var) => void): Var {
    const requiresGrad = inputs.some((v) => v?.requiresGrad);
    const out = new Var(this, shape, data, requiresGrad);
    if (requiresGrad) {
      out.backward = () => { if (out.grad) backward(out); };
      this.nodes.push(out);
    }
    return out;
  }

  /** A buffer for an op's output that the op overwrites whole (its contents are undefined): a
   *  spare one when there is one. It goes back to the spares on release(). */
  scratch(n: number): Float32Array {
    const a = spare.get(n)?.pop();
    if (a) spareFloats -= n;
    const buf = a ?? new Float32Array(n);
    this.scratch_.push(buf);
    return buf;
  }

  /** Zeros for the gradient of an op's output, from the spares like scratch(). */
  scratchZeros(n: number): Float32Array {
    const had = spare.get(n)?.length ?? 0;
    const buf = this.scratch(n);
    return had > 0 ? buf.fill(0) : buf;
  }

  /** Hands the op outputs' buffers (values and gradients) to the next tape. Call it once nothing
   *  reads the tape's values or gradients any more (the leaves' are not among them). */
  release(): void {
    let floats = 0;
    for (const a of this.scratch_) floats += a.length;
    largestTape = Math.max(largestTape, floats);
    const limit = Math.max(SPARE_LIMIT, largestTape);
    for (const a of this.scratch_) {
      if (spareFloats + a.length > limit) break;
      let list = spare.get(a.length);
      if (!list) spare.set(a.length, (list = []));
      list.push(a);
      spareFloats += a.length;
    }
    this.scratch_.length = 0;
  }

  /** ∂loss/∂v for every Var on the tape; `loss` must hold one value. Ops run in reverse order. */
  backward(loss: Var): void {
    if (loss.size !== 1) throw new RangeError(`backward: the loss must be a scalar, got shape [${loss.shape.join(", ")}]`);
    loss.gradBuffer()[0] = 1;
    for (let i = this.nodes.length - 1; i >= 0; i--) this.nodes[i].backward!();
  }
}

/** Adds src into the gradient of v, if v takes gradients (on the tape's kernels). */
export function accumulate(v: Var | null | undefined, src: Float32Array): void {
  if (v?.requiresGrad) v.tape.kernels.accumulate(v.gradBuffer(), src);
}
