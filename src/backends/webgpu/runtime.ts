// The device and how work reaches it. A forward is recorded, not run: every operation appends a
// step (a compute dispatch or a buffer copy) to a Recorder; `submit` then writes all the steps'
// parameters into one uniform buffer, encodes them into one command encoder and submits it once.
// Only the buffers asked for are read back (mapAsync), after the whole forward has run.

/// <reference types="@webgpu/types" />

import { BackendError } from "../../errors.js";
import type { AdapterReport } from "./device.js";

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

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
  /** Buffers made for this forward only, destroyed when it has been read back. */
  private readonly temporaries: GPUBuffer[] = [];

  constructor(readonly rt: GpuRuntime) {}

  /** A buffer for this forward's activations. */
  buffer(bytes: number, label = "activation"): GPUBuffer {
    const b = this.rt.buffer(bytes, label);
    this.temporaries.push(b);
    return b;
  }

  /** This forward's input data (token ids, positions, RoPE angles). */
  upload(data: ArrayBufferView, label = "input"): GPUBuffer {
    const b = this.rt.upload(data, label);
    this.temporaries.push(b);
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
      const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: params.buffer, offset, size } }];
      s.buffers.forEach((buffer, i) => entries.push({ binding: i + 1, resource: { buffer } }));
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, device.createBindGroup({ label: s.label, layout: s.pipeline.getBindGroupLayout(0), entries }));
      const x = Math.min(s.groups, maxX);
      pass.dispatchWorkgroups(x, Math.ceil(s.groups / x));
    }
    pass?.end();
    const staging = reads.map(({ buffer, bytes }) => {
      const size = Math.ceil(bytes / 4) * 4;
      const st = device.createBuffer({ label: "readback", size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      encoder.copyBufferToBuffer(buffer, 0, st, 0, size);
      return st;
    });
    device.queue.submit([encoder.finish()]);
    const oom = await device.popErrorScope();
    const invalid = await device.popErrorScope();
    const error = invalid ?? oom;
    try {
      if (error) throw new BackendError(`webgpu: ${error.message}`);
      return await Promise.all(staging.map(async (st, i) => {
        await st.mapAsync(GPUMapMode.READ);
        const out = st.getMappedRange().slice(0, reads[i].bytes);
        st.unmap();
        return out;
      }));
    } finally {
      for (const st of staging) st.destroy();
      params.buffer.destroy();
      for (const b of this.temporaries) b.destroy();
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
    const buffer = this.rt.device.createBuffer({ label: "params", size: Math.max(16, end), usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
    const mapped = buffer.getMappedRange();
    const u32 = new Uint32Array(mapped), f32 = new Float32Array(mapped);
    let di = 0;
    for (const s of this.steps) {
      if (s.kind !== "dispatch") continue;
      let w = ranges[di++].offset / 4;
      for (const v of s.params.u ?? []) u32[w++] = v;
      for (const v of s.params.f ?? []) f32[w++] = v;
    }
    buffer.unmap();
    return { buffer, ranges };
  }
}
