// A model's weights on the GPU, uploaded once, on first use, in their GGUF storage type.
// Matrices keep their blocks (the shaders dequantize, ./quant.ts); a matrix larger than the
// adapter's maxStorageBufferBindingSize is split into parts of whole rows, one buffer each.
// Vectors (norm weights, biases) are float32.

import { BackendError } from "../../errors.js";
import { typeName } from "../../io/gguf/types.js";
import type { Weight } from "../../tensor/weight.js";
import { supportsWeightType } from "./quant.js";
import type { GpuRuntime } from "./runtime.js";

export interface GpuMatrix {
  name: string;
  type: number;
  rows: number;
  cols: number;
  rowBytes: number;
  /** Consecutive row ranges, each in its own buffer. */
  parts: { row0: number; rows: number; buffer: GPUBuffer }[];
}

/** A stored matrix as GPU buffers (split into parts of at most `maxBytes`). */
export function uploadMatrix(rt: GpuRuntime, w: Weight, maxBytes = rt.maxBinding): GpuMatrix {
  if (!supportsWeightType(w.type)) throw new BackendError(`webgpu: tensor ${w.name} is stored as ${typeName(w.type)}, which the webgpu backend does not read yet`);
  const rowBytes = w.bytes.byteLength / w.rows;
  const perPart = Math.floor(maxBytes / rowBytes);
  if (perPart < 1) throw new BackendError(`webgpu: one row of ${w.name} (${rowBytes} bytes) is larger than this adapter's storage binding limit (${maxBytes})`);
  const parts: GpuMatrix["parts"] = [];
  for (let row0 = 0; row0 < w.rows; row0 += perPart) {
    const rows = Math.min(perPart, w.rows - row0);
    parts.push({ row0, rows, buffer: rt.upload(w.bytes.subarray(row0 * rowBytes, (row0 + rows) * rowBytes), w.name) });
  }
  return { name: w.name, type: w.type, rows: w.rows, cols: w.cols, rowBytes, parts };
}

/** Where the weights come from (blocks/inferenceOps.ts StoredWeights). */
export interface HostWeights {
  has(name: string): boolean;
  matrix(name: string): Weight;
  vector(name: string): Float32Array;
}

export class GpuWeights {
  private readonly matrices = new Map<string, GpuMatrix>();
  private readonly vectors = new Map<string, GPUBuffer>();
  private readonly arrays = new Map<string, GPUBuffer>();

  constructor(private readonly rt: GpuRuntime, readonly host: HostWeights) {}

  has(name: string): boolean {
    return this.host.has(name);
  }

  matrix(name: string): GpuMatrix {
    let m = this.matrices.get(name);
    if (!m) this.matrices.set(name, (m = uploadMatrix(this.rt, this.host.matrix(name))));
    return m;
  }

  /** A vector (or any tensor) as float32 values. */
  vector(name: string): GPUBuffer {
    let v = this.vectors.get(name);
    if (!v) this.vectors.set(name, (v = this.rt.upload(this.host.vector(name), name)));
    return v;
  }

  /** A constant table computed on the host (RoPE frequencies), uploaded once per key. */
  table(key: string, make: () => Float32Array): GPUBuffer {
    let t = this.arrays.get(key);
    if (!t) this.arrays.set(key, (t = this.rt.upload(make(), key)));
    return t;
  }
}
