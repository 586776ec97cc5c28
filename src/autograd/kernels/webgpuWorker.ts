// The thread that owns the WebGPU device for training (./webgpu.ts explains why a thread). It
// opens the device, then answers one request at a time: the request's arrays sit in a shared
// buffer; it uploads them, records the op's kernels (backends/webgpu/train/), submits, reads the
// results back into the shared buffer, and wakes the main thread through the control word.

/// <reference types="@webgpu/types" />

import { parentPort, workerData } from "node:worker_threads";
import { openWebGpu } from "../../backends/webgpu/adapter.js";
import { rmsNorm } from "../../backends/webgpu/norms.js";
import { Recorder, type GpuRuntime } from "../../backends/webgpu/runtime.js";
import { attentionBackward, attentionForward } from "../../backends/webgpu/train/attention.js";
import { accumulate, adamw, add, gated, gatedBackward, scale, sumOfSquaresPartials } from "../../backends/webgpu/train/elementwise.js";
import { gemm } from "../../backends/webgpu/train/gemm.js";
import { ropeBackward, ropeForward, ropeTable } from "../../backends/webgpu/train/rope.js";
import { crossEntropyBackward, logSumExp, rmsNormBackward } from "../../backends/webgpu/train/rows.js";
import { CONTROL, STATE, type ArraySlot, type Request } from "./webgpuProtocol.js";

type View = Float32Array | Int32Array;
/** An op: records its kernels, and says which buffers to read back into which of its arrays. */
type Op = (rec: Recorder, a: (View | null)[], s: Record<string, any>) => { from: GPUBuffer; into: View }[];

const f32 = (v: View | null) => v as Float32Array;
const F = 4;

const OPS: Record<string, Op> = {
  linear(rec, [x, w, y], { N, nIn, nOut }) {
    const yb = rec.buffer(N * nOut * F);
    gemm(rec, { buffer: rec.upload(x!), ld: nIn, trans: false }, { buffer: rec.upload(w!), ld: nIn, trans: true }, yb, N, nOut, nIn, false);
    return [{ from: yb, into: y! }];
  },
  linearBackward(rec, [dy, x, w, dx, dw], { N, nIn, nOut }) {
    const dyb = rec.upload(dy!), reads = [];
    if (dx) {
      const dxb = rec.upload(dx);   // dx [N, nIn] += ∂y [N, nOut] · W [nOut, nIn]
      gemm(rec, { buffer: dyb, ld: nOut, trans: false }, { buffer: rec.upload(w!), ld: nIn, trans: false }, dxb, N, nIn, nOut, true);
      reads.push({ from: dxb, into: dx });
    }
    if (dw) {
      const dwb = rec.upload(dw);   // dW [nOut, nIn] += ∂yᵀ · x [N, nIn]
      gemm(rec, { buffer: dyb, ld: nOut, trans: true }, { buffer: rec.upload(x!), ld: nIn, trans: false }, dwb, nOut, nIn, N, true);
      reads.push({ from: dwb, into: dw });
    }
    return reads;
  },
  attention(rec, [q, k, v, out, probs], { shape, opts }) {
    const ob = rec.buffer(out!.length * F), pb = rec.buffer(probs!.length * F);
    attentionForward(rec, rec.upload(q!), rec.upload(k!), rec.upload(v!), shape, opts, ob, pb);
    return [{ from: ob, into: out! }, { from: pb, into: probs! }];
  },
  attentionBackward(rec, [dy, q, k, v, probs, dq, dk, dv], { shape, opts }) {
    const dqb = rec.upload(dq!), dkb = rec.upload(dk!), dvb = rec.upload(dv!);
    attentionBackward(rec, rec.upload(dy!), rec.upload(q!), rec.upload(k!), rec.upload(v!), rec.upload(probs!), shape, opts,
      rec.buffer(probs!.length * F), dqb, dkb, dvb);
    return [{ from: dqb, into: dq! }, { from: dkb, into: dk! }, { from: dvb, into: dv! }];
  },
  rmsNorm(rec, [x, g, y], { rows, n, eps }) {
    const yb = rec.buffer(rows * n * F);
    rmsNorm(rec, rec.upload(x!), rec.upload(g!), rows, n, eps, yb);
    return [{ from: yb, into: y! }];
  },
  rmsNormBackward(rec, [dy, x, g, dx, dg], { rows, n, eps }) {
    const dxb = dx && rec.upload(dx), dgb = dg && rec.upload(dg);
    rmsNormBackward(rec, rec.upload(dy!), rec.upload(x!), rec.upload(g!), rows, n, eps, dxb, dgb, rec.buffer(rows * F));
    return [...(dx ? [{ from: dxb!, into: dx }] : []), ...(dg ? [{ from: dgb!, into: dg }] : [])];
  },
  rope(rec, [x, positions, invFreq, y], { shape }) {
    const yb = rec.buffer(y!.length * F);
    ropeForward(rec, rec.upload(x!), rec.upload(ropeTable(positions as Int32Array, invFreq!, shape.dims)), shape, yb);
    return [{ from: yb, into: y! }];
  },
  ropeBackward(rec, [dy, y, positions, invFreq, dx, dinv], { shape }) {
    const dxb = dx && rec.upload(dx), dinvb = dinv && rec.upload(dinv);
    ropeBackward(rec, rec.upload(dy!), rec.upload(y!), rec.upload(positions!), rec.upload(ropeTable(positions as Int32Array, invFreq!, shape.dims)),
      shape, dxb, dinvb);
    return [...(dx ? [{ from: dxb!, into: dx }] : []), ...(dinv ? [{ from: dinvb!, into: dinv }] : [])];
  },
  gated(rec, [gate, up, y], { act }) {
    const yb = rec.buffer(y!.length * F);
    gated(rec, rec.upload(gate!), rec.upload(up!), act, y!.length, yb);
    return [{ from: yb, into: y! }];
  },
  gatedBackward(rec, [dy, gate, up, dgate, dup], { act }) {
    const dgb = dgate && rec.upload(dgate), dub = dup && rec.upload(dup);
    gatedBackward(rec, rec.upload(dy!), rec.upload(gate!), rec.upload(up!), act, dy!.length, dgb, dub);
    return [...(dgate ? [{ from: dgb!, into: dgate }] : []), ...(dup ? [{ from: dub!, into: dup }] : [])];
  },
  logSumExp(rec, [logits, lse], { rows, V }) {
    const lb = rec.buffer(rows * F);
    logSumExp(rec, rec.upload(logits!), rows, V, lb);
    return [{ from: lb, into: lse! }];
  },
  crossEntropyBackward(rec, [logits, targets, lse, dz], { rows, V, ignore, g }) {
    const dzb = rec.upload(dz!);
    crossEntropyBackward(rec, rec.upload(logits!), rec.upload(targets!), rec.upload(lse!), rows, V, ignore, g, dzb);
    return [{ from: dzb, into: dz! }];
  },
  add(rec, [a, b, y]) {
    const yb = rec.buffer(y!.length * F);
    add(rec, rec.upload(a!), rec.upload(b!), y!.length, yb);
    return [{ from: yb, into: y! }];
  },
  accumulate(rec, [dst, src]) {
    const db = rec.upload(dst!);
    accumulate(rec, db, rec.upload(src!), dst!.length);
    return [{ from: db, into: dst! }];
  },
  scale(rec, [x], { s }) {
    const xb = rec.upload(x!);
    scale(rec, xb, x!.length, s);
    return [{ from: xb, into: x! }];
  },
  sumOfSquares(rec, [x, partials]) {
    const pb = rec.buffer(partials!.length * F);
    sumOfSquaresPartials(rec, rec.upload(x!), x!.length, pb);
    return [{ from: pb, into: partials! }];
  },
  adamw(rec, [theta, g, m, v], { h }) {
    const tb = rec.upload(theta!), mb = rec.upload(m!), vb = rec.upload(v!);
    adamw(rec, tb, rec.upload(g!), mb, vb, theta!.length, { ...h, gradScale: h.gradScale ?? 1 });
    return [{ from: tb, into: theta! }, { from: mb, into: m! }, { from: vb, into: v! }];
  },
};

const { control: controlBuffer, error: errorBuffer } = workerData as { control: SharedArrayBuffer; error: SharedArrayBuffer };
const control = new Int32Array(controlBuffer);
const errorBytes = new Uint8Array(errorBuffer);

function answer(state: number, message = ""): void {
  const bytes = new TextEncoder().encode(message).subarray(0, errorBytes.length);
  errorBytes.set(bytes);
  control[CONTROL.errorLength] = bytes.length;
  Atomics.store(control, CONTROL.state, state);
  Atomics.notify(control, CONTROL.state);
}

function view(data: SharedArrayBuffer, slot: ArraySlot | null): View | null {
  if (!slot) return null;
  return slot.kind === "i32" ? new Int32Array(data, slot.offset, slot.length) : new Float32Array(data, slot.offset, slot.length);
}

async function run(rt: GpuRuntime, req: Request): Promise<void> {
  const op = OPS[req.op];
  if (!op) throw new Error(`unknown op ${req.op}`);
  const arrays = req.arrays.map((slot) => view(req.data, slot));
  const rec = new Recorder(rt);
  const reads = op(rec, arrays, req.scalars).filter((r) => r.into.length > 0);
  const results = await rec.submit(reads.map((r) => ({ buffer: r.from, bytes: r.into.byteLength })));
  reads.forEach((r, i) => f32(r.into).set(new Float32Array(results[i])));
}

const opened = await openWebGpu();
process.on("uncaughtException", (e) => answer(STATE.failed, `webgpu training thread: ${e.message}`));
parentPort!.on("message", async (req: Request | { op: "open" }) => {
  if ("error" in opened) return answer(STATE.failed, `the webgpu backend is not available: ${opened.error}`);
  if (req.op === "open") return answer(STATE.done, `${opened.report.name} (${opened.report.via})`);
  try {
    await run(opened, req as Request);
    answer(STATE.done);
  } catch (e) {
    answer(STATE.failed, `webgpu ${req.op}: ${(e as Error).message}`);
  }
});
