// The device and how work reaches it. A forward is recorded, not run: every operation appends a
// step (a compute dispatch or a buffer copy) to a Recorder; `submit` then writes all the steps'
// parameters into one uniform buffer, encodes them into one command encoder and submits it once.
// Only the buffers asked for are read back (mapAsync), after the whole forward has run.
// A forward's buffers (activations, inputs, parameters, readback staging) come from a pool kept
// by the runtime and go back to it once the forward has been read back: creating and destroying
// a few hundred buffers per decoded token costs more than the token's arithmetic on a real GPU.
// Bind groups are kept too, by pipeline and bound buffers: a forward of the same shapes gets the
// same pooled buffers in the same order, so a decode step reuses the previous step's bind groups
// (making one took ~21 µs per dispatch through Dawn's Node binding on an H200 machine: 13 ms of
// a 17 ms decode step, docs/performance.md).
// TOY_WEBGPU_TRACE=1 prints each submission's steps and times to stderr.

/// <reference types="@webgpu/types" />

import { BackendError } from "../../errors.js";
import type { AdapterReport } from "./device.js";

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const USAGES = { storage: STORAGE, uniform: () => GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, read: () => GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST };
type PoolKind = keyof typeof USAGES;
/** The pool keeps at most this many bytes of free buffers; past it, returned buffers are destroyed. */
const POOL_BYTES = 512 * 2 ** 20;
/** Bind groups kept at most (a decode step of a 30-layer model makes ~600); past it, all are dropped. */
const MAX_BIND_GROUPS = 8192;
/** TOY_WEBGPU_TRACE=1 in Node (a browser has no process environment). */
const trace = Boolean((globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.TOY_WEBGPU_TRACE);

/** The size class of a request: at least 256 bytes, rounded up to a quarter of its power of two
 *  (so a buffer that grows a little every token, such as the attention scores, is reused). */
export function sizeClass(bytes: number): number {
  const n = Math.max(256, Math.ceil(bytes / 4) * 4);
  const quarter = 2 ** Math.max(6, Math.floor(Math.log2(n)) - 2);
  return Math.ceil(n / quarter) * quarter;
}

/** A kernel's parameters: its WGSL `Params` struct, all u32 fields first, then the f32 ones. */
export interface Params {
  u?: readonly number[];
  f?: readonly number[];
}

/** Workgroups to launch, and the grid width the kernels use to number them (see GRID_WGSL). */
export type Groups = number;

/**
 * Every kernel numbers its workgroups 0.. as wid.y · nwg.x + wid.x, so that more than
 * maxComputeWorkgroupsPerDimension (65,535) of them fit in a 2-D launch.
 */
export const GRID_WGSL = /* wgsl */ `
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.y * nwg.x + wid.x; }
`;

type Step =
  | { kind: "dispatch"; pipeline: GPUComputePipeline; buffers: GPUBuffer[]; params: Params; groups: Groups; label: string }
  | { kind: "copy"; from: GPUBuffer; fromOffset: number; to: GPUBuffer; toOffset: number; bytes: number };

export class GpuRuntime {
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  /** Free buffers by usage and size class. */
  private readonly free = new Map<string, GPUBuffer[]>();
  private freeBytes = 0;
  private readonly bindGroups = new Map<string, GPUBindGroup>();
  private readonly ids = new WeakMap<object, number>();
  private nextId = 1;
  /** Bind groups made and found, for TOY_WEBGPU_TRACE. */
  readonly bindGroupStats = { made: 0, reused: 0 };
  /** Whether the forward joins products and their epilogues into one dispatch (blocks/gpuOps.ts);
   *  off only to check that the joined kernels give the same bits as the separate ones. */
  fuse = true;
  /** Bound where a kernel's optional input is absent (a bias, a norm's shift): never read. */
  readonly unused: GPUBuffer;

  /** `instance`: the GPU object the device came from, held so that it is not collected. */
  constructor(readonly device: GPUDevice, readonly report: AdapterReport, readonly instance?: GPU) {
    this.unused = this.buffer(16, "unused");
  }

  get maxBinding(): number {
    return this.device.limits.maxStorageBufferBindingSize;
  }

  /** The compiled kernel for `key`, built from `source()` on first use. */
  pipeline(key: string, source: () => string): GPUComputePipeline {
    let p = this.pipelines.get(key);
    if (!p) {
      const module = this.device.createShaderModule({ label: key, code: source() });
      p = this.device.createComputePipeline({ label: key, layout: "auto", compute: { module, entryPoint: "main" } });
      this.pipelines.set(key, p);
    }
    return p;
  }

  /** A storage buffer of at least `bytes` (rounded up to whole words). */
  buffer(bytes: number, label = "buffer"): GPUBuffer {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    if (size > this.device.limits.maxBufferSize) throw new BackendError(`webgpu: ${label} needs ${size} bytes, more than this adapter's maxBufferSize (${this.device.limits.maxBufferSize})`);
    return this.device.createBuffer({ label, size, usage: STORAGE() });
  }

  /** A pooled buffer of `kind` with room for `bytes` (its size is the size class). */
  acquire(kind: PoolKind, bytes: number, label: string): GPUBuffer {
    const size = sizeClass(bytes);
    const reused = this.free.get(`${kind} ${size}`)?.pop();
    if (reused) {
      this.freeBytes -= size;
      return reused;
    }
    if (size > this.device.limits.maxBufferSize) throw new BackendError(`webgpu: ${label} needs ${size} bytes, more than this adapter's maxBufferSize (${this.device.limits.maxBufferSize})`);
    return this.device.createBuffer({ label, size, usage: USAGES[kind]() });
  }

  /** A number naming a pipeline or buffer for the bind-group cache. */
  private idOf(o: object): number {
    let id = this.ids.get(o);
    if (id === undefined) this.ids.set(o, (id = this.nextId++));
    return id;
  }

  /** The bind group of `pipeline` over the params range and these buffers: made once, then reused. */
  bindGroup(pipeline: GPUComputePipeline, params: { buffer: GPUBuffer; offset: number; size: number }, buffers: readonly GPUBuffer[], label: string): GPUBindGroup {
    let key = `${this.idOf(pipeline)} ${this.idOf(params.buffer)}:${params.offset}:${params.size}`;
    for (const b of buffers) key += ` ${this.idOf(b)}`;
    let group = this.bindGroups.get(key);
    if (group) {
      this.bindGroupStats.reused++;
      return group;
    }
    if (this.bindGroups.size >= MAX_BIND_GROUPS) this.bindGroups.clear();
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: params }];
    buffers.forEach((buffer, i) => entries.push({ binding: i + 1, resource: { buffer } }));
    group = this.device.createBindGroup({ label, layout: pipeline.getBindGroupLayout(0), entries });
    this.bindGroups.set(key, group);
    this.bindGroupStats.made++;
    return group;
  }

  /** Give a pooled buffer back (its work done), or destroy it when the pool is full (and forget
   *  the bind groups, some of which held it). */
  release(kind: PoolKind, buffer: GPUBuffer): void {
    if (this.freeBytes + buffer.size > POOL_BYTES) {
      this.bindGroups.clear();
      return buffer.destroy();
    }
    const key = `${kind} ${buffer.size}`;
    let list = this.free.get(key);
    if (!list) this.free.set(key, (list = []));
    list.push(buffer);
    this.freeBytes += buffer.size;
  }

  /** A storage buffer holding these bytes. */
  upload(data: ArrayBufferView, label = "upload"): GPUBuffer {
    const size = Math.max(4, Math.ceil(data.byteLength / 4) * 4);
    const buf = this.device.createBuffer({ label, size, usage: STORAGE(), mappedAtCreation: true });
    new Uint8Array(buf.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    buf.unmap();
    return buf;
  }
}

/** One forward's work, recorded step by step and submitted once. */
export class Recorder {
  private readonly steps: Step[] = [];
  /** Pooled buffers of this forward, returned to the pool when it has been read back. */
  private readonly temporaries: { kind: PoolKind; buffer: GPUBuffer }[] = [];
  private readonly started = performance.now();

  constructor(readonly rt: GpuRuntime) {}

  private take(kind: PoolKind, bytes: number, label: string): GPUBuffer {
    const buffer = this.rt.acquire(kind, bytes, label);
    this.temporaries.push({ kind, buffer });
    return buffer;
  }

  /** A buffer for this forward's activations (its contents undefined until written). */
  buffer(bytes: number, label = "activation"): GPUBuffer {
    return this.take("storage", bytes, label);
  }

  /** This forward's input data (token ids, positions, RoPE angles). */
  upload(data: ArrayBufferView, label = "input"): GPUBuffer {
    const b = this.take("storage", data.byteLength, label);
    writeWords(this.rt.device, b, data);
    return b;
  }

  /** Run `pipeline` over `groups` workgroups; binding 0 is the params, 1.. are `buffers`. */
  dispatch(pipeline: GPUComputePipeline, buffers: GPUBuffer[], params: Params, groups: Groups, label: string): void {
    if (groups > 0) this.steps.push({ kind: "dispatch", pipeline, buffers, params, groups, label });
  }

  copy(from: GPUBuffer, fromOffset: number, to: GPUBuffer, toOffset: number, bytes: number): void {
    if (bytes > 0) this.steps.push({ kind: "copy", from, fromOffset, to, toOffset, bytes });
  }

  /**
   * Submit every step in one command buffer, then read back `reads` (byte ranges of buffers).
   * Validation errors of any step (a kernel that does not compile, a binding too large) are
   * thrown here with the kernel's label.
   */
  async submit(reads: readonly { buffer: GPUBuffer; bytes: number }[]): Promise<ArrayBuffer[]> {
    const device = this.rt.device;
    const recorded = performance.now();
    device.pushErrorScope("validation");
    device.pushErrorScope("out-of-memory");
    const params = this.packParams();
    const encoder = device.createCommandEncoder();
    let pass: GPUComputePassEncoder | null = null;
    let di = 0;
    const maxX = device.limits.maxComputeWorkgroupsPerDimension;
    for (const s of this.steps) {
      if (s.kind === "copy") {
        pass?.end();
        pass = null;
        encoder.copyBufferToBuffer(s.from, s.fromOffset, s.to, s.toOffset, s.bytes);
        continue;
      }
      pass ??= encoder.beginComputePass();
      const { offset, size } = params.ranges[di++];
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, this.rt.bindGroup(s.pipeline, { buffer: params.buffer, offset, size }, s.buffers, s.label));
      const x = Math.min(s.groups, maxX);
      pass.dispatchWorkgroups(x, Math.ceil(s.groups / x));
    }
    pass?.end();
    const staging = reads.map(({ buffer, bytes }) => {
      const st = this.take("read", bytes, "readback");
      encoder.copyBufferToBuffer(buffer, 0, st, 0, Math.ceil(bytes / 4) * 4);
      return st;
    });
    device.queue.submit([encoder.finish()]);
    const encoded = performance.now();
    // The error scopes and the readbacks are awaited together: one round trip, not three.
    const oom = device.popErrorScope(), invalid = device.popErrorScope();
    const maps = staging.map((st) => st.mapAsync(GPUMapMode.READ));
    const settled = await Promise.allSettled([invalid, oom, ...maps]);
    try {
      for (const r of settled.slice(0, 2)) {
        if (r.status === "rejected") throw r.reason;
        if (r.value) throw new BackendError(`webgpu: ${(r.value as GPUError).message}`);
      }
      return staging.map((st, i) => {
        const r = settled[2 + i];
        if (r.status === "rejected") throw new BackendError(`webgpu: reading back failed: ${(r.reason as Error).message}`);
        const out = st.getMappedRange(0, Math.ceil(reads[i].bytes / 4) * 4).slice(0, reads[i].bytes);
        st.unmap();
        return out;
      });
    } finally {
      if (trace) {
        const done = performance.now(), bg = this.rt.bindGroupStats;
        console.error(`webgpu: ${this.steps.length} steps; record ${(recorded - this.started).toFixed(2)} ms, encode ${(encoded - recorded).toFixed(2)} ms, run + read back ${(done - encoded).toFixed(2)} ms; bind groups made ${bg.made}, reused ${bg.reused} so far`);
      }
      for (const st of staging) if (st.mapState === "mapped") st.unmap();
      // In reverse: the next forward of the same shapes takes the same buffers in the same order
      // (each size class is a stack), so it finds its bind groups made.
      for (const { kind, buffer } of this.temporaries.reverse()) this.rt.release(kind, buffer);
      this.temporaries.length = 0;
      this.steps.length = 0;
    }
  }

  /** Every dispatch's params, one after another (at the device's uniform offset alignment). */
  private packParams(): { buffer: GPUBuffer; ranges: { offset: number; size: number }[] } {
    const align = this.rt.device.limits.minUniformBufferOffsetAlignment;
    const ranges: { offset: number; size: number }[] = [];
    let end = 0;
    for (const s of this.steps) {
      if (s.kind !== "dispatch") continue;
      const words = (s.params.u?.length ?? 0) + (s.params.f?.length ?? 0);
      const size = Math.max(16, Math.ceil((words * 4) / 16) * 16);
      ranges.push({ offset: end, size });
      end = Math.ceil((end + size) / align) * align;
    }
    const mapped = new ArrayBuffer(Math.max(16, end));
    const u32 = new Uint32Array(mapped), f32 = new Float32Array(mapped);
    let di = 0;
    for (const s of this.steps) {
      if (s.kind !== "dispatch") continue;
      let w = ranges[di++].offset / 4;
      for (const v of s.params.u ?? []) u32[w++] = v;
      for (const v of s.params.f ?? []) f32[w++] = v;
    }
    const buffer = this.take("uniform", mapped.byteLength, "params");
    this.rt.device.queue.writeBuffer(buffer, 0, mapped);
    return { buffer, ranges };
  }
}

/** Write `data` at the start of `buffer`. writeBuffer takes whole words (a ragged tail is
 *  padded) and refuses views of a SharedArrayBuffer (the training worker's inputs: copied). */
function writeWords(device: GPUDevice, buffer: GPUBuffer, data: ArrayBufferView): void {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // (A page without cross-origin isolation has no SharedArrayBuffer at all.)
  const shared = typeof SharedArrayBuffer !== "undefined" && bytes.buffer instanceof SharedArrayBuffer;
  if (bytes.byteLength % 4 === 0 && !shared) device.queue.writeBuffer(buffer, 0, bytes);
  else {
    const padded = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
    padded.set(bytes);
    device.queue.writeBuffer(buffer, 0, padded);
  }
}
