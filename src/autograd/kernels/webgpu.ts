// Training kernels on the webgpu backend: every op runs as WGSL compute kernels
// (backends/webgpu/train/, and the inference rmsNorm) on the WebGPU device.
//
// TrainKernels is synchronous (the tape calls an op and reads its result at once), while WebGPU
// reads back asynchronously (mapAsync). So the device lives on a worker thread
// (./webgpuWorker.ts) and each call here blocks: its arrays are copied into a shared buffer, the
// request is posted, and the main thread sleeps in Atomics.wait until the thread has uploaded,
// dispatched, read back and copied the results in. Every op pays an upload and a download (see
// docs/internals.md: the next step is a tape whose values stay on the GPU).

import { Worker } from "node:worker_threads";
import { SUM_CHUNK } from "../../backends/webgpu/train/elementwise.js";
import { BackendError } from "../../errors.js";
import type { TrainKernels } from "./index.js";
import { CONTROL, STATE, type ArraySlot, type Request } from "./webgpuProtocol.js";

type Arr = Float32Array | Int32Array;
/** How an array travels: in (read by the op), inout (added into, copied back), out (written). */
type Mode = "in" | "inout" | "out";

/** How long one op may take before the thread is taken for dead (llvmpipe is slow, not this slow). */
const OP_TIMEOUT_MS = 10 * 60 * 1000;

class GpuThread {
  private readonly control = new Int32Array(new SharedArrayBuffer(8));
  private readonly error = new Uint8Array(new SharedArrayBuffer(4096));
  private data = new SharedArrayBuffer(1 << 20);
  private readonly worker: Worker;
  /** The adapter, as the thread found it. */
  readonly adapter: string;

  constructor() {
    // Mesa's EGL needs no display when told so; a worker's process.env is its own copy, so this
    // must be set here, before the thread starts.
    process.env.EGL_PLATFORM ??= "surfaceless";
    this.worker = new Worker(new URL("./webgpuWorker.js", import.meta.url), { workerData: { control: this.control.buffer, error: this.error.buffer } });
    this.worker.unref();
    try {
      this.adapter = this.post({ op: "open" });
    } catch (e) {
      void this.worker.terminate();
      throw e;
    }
  }

  /** Post a message and wait for the answer (the thread's message, or its error thrown). */
  private post(message: unknown): string {
    Atomics.store(this.control, CONTROL.state, STATE.waiting);
    this.worker.postMessage(message);
    const waited = Atomics.wait(this.control, CONTROL.state, STATE.waiting, OP_TIMEOUT_MS);
    if (waited === "timed-out") throw new BackendError(`webgpu: the training thread did not answer within ${OP_TIMEOUT_MS / 1000} s`);
    const text = new TextDecoder().decode(this.error.slice(0, this.control[CONTROL.errorLength]));
    if (this.control[CONTROL.state] === STATE.failed) throw new BackendError(text);
    return text;
  }

  /** Run `op` on the device over `arrays`; the inout and out arrays hold its results after. */
  call(op: string, scalars: Record<string, unknown>, arrays: [Arr | null, Mode][]): void {
    let bytes = 0;
    const slots: (ArraySlot | null)[] = arrays.map(([a]) => {
      if (!a) return null;
      const slot: ArraySlot = { offset: bytes, length: a.length, kind: a instanceof Int32Array ? "i32" : "f32" };
      bytes += Math.ceil(a.byteLength / 16) * 16;
      return slot;
    });
    if (bytes > this.data.byteLength) this.data = new SharedArrayBuffer(Math.max(bytes, 2 * this.data.byteLength));
    const view = (a: Arr, s: ArraySlot) => (a instanceof Int32Array ? new Int32Array(this.data, s.offset, s.length) : new Float32Array(this.data, s.offset, s.length));
    arrays.forEach(([a, mode], i) => { if (a && mode !== "out") view(a, slots[i]!).set(a); });
    const request: Request = { op, scalars, arrays: slots, data: this.data };
    this.post(request);
    arrays.forEach(([a, mode], i) => { if (a && mode !== "in") a.set(view(a, slots[i]!)); });
  }
}

let thread: GpuThread | undefined;

/** The training kernels on the WebGPU device (an error, exit 4, when there is none). */
export function webgpuTrainKernels(): TrainKernels {
  thread ??= new GpuThread();
  const t = thread;
  return {
    device: "webgpu",
    linear(x, w, N, nIn, nOut, y = new Float32Array(N * nOut)) {
      t.call("linear", { N, nIn, nOut }, [[x, "in"], [w, "in"], [y, "out"]]);
      return y;
    },
    linearBackward(dy, x, w, N, nIn, nOut, dx, dw) {
      if (!dx && !dw) return;
      t.call("linearBackward", { N, nIn, nOut }, [[dy, "in"], [dw ? x : null, "in"], [dx ? w : null, "in"], [dx, "inout"], [dw, "inout"]]);
    },
    attention(q, k, v, shape, opts, out = new Float32Array(q.length), scratch = (n) => new Float32Array(n)) {
      const probs = scratch(shape.batch * shape.heads * shape.seq * shape.seq);
      t.call("attention", { shape, opts }, [[q, "in"], [k, "in"], [v, "in"], [out, "out"], [probs, "out"]]);
      return { out, probs };
    },
    attentionBackward(dy, q, k, v, probs, shape, opts, dq, dk, dv) {
      const p32 = probs instanceof Float32Array ? probs : Float32Array.from(probs);
      t.call("attentionBackward", { shape, opts }, [[dy, "in"], [q, "in"], [k, "in"], [v, "in"], [p32, "in"], [dq, "inout"], [dk, "inout"], [dv, "inout"]]);
    },
    rmsNorm(x, g, rows, n, eps, y = new Float32Array(rows * n)) {
      t.call("rmsNorm", { rows, n, eps }, [[x, "in"], [g, "in"], [y, "out"]]);
      return y;
    },
    rmsNormBackward(dy, x, g, rows, n, eps, dx, dg) {
      if (!dx && !dg) return;
      t.call("rmsNormBackward", { rows, n, eps }, [[dy, "in"], [x, "in"], [g, "in"], [dx, "inout"], [dg, "inout"]]);
    },
    rope(x, positions, invFreq, s, y = new Float32Array(x.length)) {
      const shape = { N: x.length / (s.heads * s.headDim), heads: s.heads, headDim: s.headDim, dims: s.dims, neox: s.style === "neox" };
      t.call("rope", { shape }, [[x, "in"], [positions, "in"], [invFreq, "in"], [y, "out"]]);
      return y;
    },
    ropeBackward(dy, y, positions, invFreq, s, dx, dinv) {
      if (!dx && !dinv) return;
      const shape = { N: y.length / (s.heads * s.headDim), heads: s.heads, headDim: s.headDim, dims: s.dims, neox: s.style === "neox" };
      t.call("ropeBackward", { shape }, [[dy, "in"], [y, "in"], [positions, "in"], [invFreq, "in"], [dx, "inout"], [dinv, "inout"]]);
    },
    gated(gate, up, act, y = new Float32Array(gate.length)) {
      t.call("gated", { act }, [[gate, "in"], [up, "in"], [y, "out"]]);
      return y;
    },
    gatedBackward(dy, gate, up, act, dgate, dup) {
      if (!dgate && !dup) return;
      t.call("gatedBackward", { act }, [[dy, "in"], [gate, "in"], [up, "in"], [dgate, "inout"], [dup, "inout"]]);
    },
    crossEntropy(logits, targets, V, ignore) {
      // The log-sum-exp of every row on the device; the loss, one number per row, here in float64.
      const rows = targets.length, lse32 = new Float32Array(rows);
      t.call("logSumExp", { rows, V }, [[logits, "in"], [lse32, "out"]]);
      const lse = new Float64Array(rows);
      let total = 0;
      for (let r = 0; r < rows; r++) {
        if (targets[r] === ignore) continue;
        lse[r] = lse32[r];
        total += lse[r] - logits[r * V + targets[r]];
      }
      return { total, lse };
    },
    crossEntropyBackward(logits, targets, lse, V, ignore, g, dz) {
      t.call("crossEntropyBackward", { rows: targets.length, V, ignore, g }, [[logits, "in"], [targets, "in"], [Float32Array.from(lse), "in"], [dz, "inout"]]);
    },
    add(a, b, out = new Float32Array(a.length)) {
      t.call("add", {}, [[a, "in"], [b, "in"], [out, "out"]]);
      return out;
    },
    accumulate(dst, src) { t.call("accumulate", {}, [[dst, "inout"], [src, "in"]]); },
    sumOfSquares(x) {
      const partials = new Float32Array(Math.ceil(x.length / SUM_CHUNK));
      t.call("sumOfSquares", {}, [[x, "in"], [partials, "out"]]);
      let s = 0;
      for (const p of partials) s += p;
      return s;
    },
    scale(x, s) { t.call("scale", { s }, [[x, "inout"]]); },
    adamw(theta, g, m, v, h) { t.call("adamw", { h }, [[theta, "inout"], [g, "in"], [m, "inout"], [v, "inout"]]); },
  };
}
