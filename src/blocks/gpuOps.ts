// Ops (./ops.ts) on the GPU (the webgpu backend): the same forward code (archs/*.ts) as
// inference on the host, with X = GpuTensor. Every operation records its kernels
// (backends/webgpu/*.ts) into the forward's Recorder (backends/webgpu/runtime.ts); nothing
// runs until the forward is submitted, as one command buffer.

import type { AttentionOptions } from "../backends/kernels.js";
import { attention } from "../backends/webgpu/attention.js";
import { copyCols } from "../backends/webgpu/copyCols.js";
import { binary, unary } from "../backends/webgpu/elementwise.js";
import { getRows } from "../backends/webgpu/getRows.js";
import { matmul } from "../backends/webgpu/matmul.js";
import { layerNorm, rmsNorm } from "../backends/webgpu/norms.js";
import { rope, ropeAngles } from "../backends/webgpu/rope.js";
import type { Recorder } from "../backends/webgpu/runtime.js";
import { softmax } from "../backends/webgpu/softmax.js";
import { GpuTensor } from "../backends/webgpu/tensor.js";
import type { GpuWeights } from "../backends/webgpu/weights.js";
import { ToyError } from "../errors.js";
import { GpuKVCache } from "./gpuKVCache.js";
import type { RopeTables } from "./inferenceOps.js";
import type { Segment } from "./kvCache.js";
import type { ExpertResult, Ops, RopeSpec } from "./ops.js";

const F32 = 4;

export class GpuOps implements Ops<GpuTensor> {
  /** This forward's RoPE angles, per frequency table. */
  private readonly angles = new Map<Float32Array, GPUBuffer>();

  constructor(
    private readonly rec: Recorder,
    private readonly weights: GpuWeights,
    private readonly ropes: RopeTables,
    private readonly segments: readonly Segment[],
    readonly positions: Int32Array,
    /** The rows whose outputs are wanted (null: all). */
    private readonly wanted: number[] | null,
  ) {}

  private tensor(shape: readonly number[], label?: string): GpuTensor {
    return new GpuTensor(shape, this.rec.buffer(shape.reduce((a, b) => a * b, 1) * F32, label));
  }

  has(name: string): boolean { return this.weights.has(name); }

  embedding(table: string, ids: Int32Array): GpuTensor {
    const w = this.weights.matrix(table);
    for (const id of ids) if (!(id >= 0 && id < w.rows)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${w.rows - 1})`);
    const y = this.tensor([ids.length, w.cols], table);
    getRows(this.rec, w, this.rec.upload(ids, "ids"), ids.length, y.buffer);
    return y;
  }

  linears(x: GpuTensor, weights: readonly string[], biases?: readonly (string | null)[] | null, rows?: readonly [number, number]): GpuTensor[] {
    return weights.map((w, i) => this.linear(x, w, biases?.[i] ?? null, rows));
  }
  linear(x: GpuTensor, weight: string, bias?: string | null, rows?: readonly [number, number]): GpuTensor {
    if (rows) throw new ToyError("webgpu: mixture-of-experts layers are not supported on the webgpu backend yet");
    const w = this.weights.matrix(weight);
    const y = this.tensor([x.rows, w.rows], weight);
    matmul(this.rec, x.buffer, w, x.rows, bias ? this.weights.vector(bias) : null, y.buffer);
    return y;
  }

  param(name: string): GpuTensor {
    const w = this.weights.host.matrix(name);
    return new GpuTensor(w.dims.length === 1 ? [w.cols] : [w.rows, w.cols], this.weights.vector(name));
  }

  input(data: Float32Array, shape: readonly number[]): GpuTensor {
    return new GpuTensor(shape, this.rec.upload(data));
  }

  rmsNorm(x: GpuTensor, weight: string, eps: number): GpuTensor {
    const y = this.tensor(x.shape);
    rmsNorm(this.rec, x.buffer, this.weights.vector(weight), x.rows, x.cols, eps, y.buffer);
    return y;
  }
  layerNorm(x: GpuTensor, weight: string, bias: string | null, eps: number): GpuTensor {
    const y = this.tensor(x.shape);
    layerNorm(this.rec, x.buffer, this.weights.vector(weight), bias ? this.weights.vector(bias) : null, x.rows, x.cols, eps, y.buffer);
    return y;
  }

  add(a: GpuTensor, b: GpuTensor): GpuTensor { return this.binary("add", a, b); }
  swiglu(gate: GpuTensor, up: GpuTensor): GpuTensor { return this.binary("swiglu", gate, up); }
  geglu(gate: GpuTensor, up: GpuTensor): GpuTensor { return this.binary("geglu", gate, up); }
  scale(x: GpuTensor, s: number): GpuTensor { return this.unary("scale", x, s); }
  softcap(x: GpuTensor, cap: number): GpuTensor { return this.unary("softcap", x, cap); }
  gelu(x: GpuTensor): GpuTensor { return this.unary("gelu", x); }

  private unary(op: "scale" | "softcap" | "gelu", x: GpuTensor, s = 0): GpuTensor {
    const y = this.tensor(x.shape);
    unary(this.rec, op, x.buffer, x.size, y.buffer, s);
    return y;
  }
  private binary(op: "add" | "swiglu" | "geglu", a: GpuTensor, b: GpuTensor): GpuTensor {
    if (a.size !== b.size) throw new RangeError(`${op}: shapes [${a.shape}] and [${b.shape}] differ`);
    const y = this.tensor(a.shape);
    binary(this.rec, op, a.buffer, b.buffer, a.size, y.buffer);
    return y;
  }

  softmax(x: GpuTensor): GpuTensor {
    const y = this.tensor(x.shape);
    softmax(this.rec, x.buffer, x.rows, x.cols, y.buffer);
    return y;
  }
  map(): GpuTensor {
    throw new ToyError("webgpu: a custom elementwise function (ops.map) is JavaScript and cannot run on the GPU");
  }

  reshape(x: GpuTensor, shape: readonly number[]): GpuTensor { return new GpuTensor(shape, x.buffer); }
  sliceCols(x: GpuTensor, from: number, to: number): GpuTensor {
    const y = this.tensor([x.rows, to - from]);
    copyCols(this.rec, x.buffer, x.rows, x.cols, from, to - from, y.buffer);
    return y;
  }
  sliceRows(x: GpuTensor, from: number, to: number): GpuTensor {
    const n = x.cols, y = this.tensor([to - from, n]);
    this.rec.copy(x.buffer, from * n * F32, y.buffer, 0, (to - from) * n * F32);
    return y;
  }
  gatherRows(x: GpuTensor, rows: readonly number[]): GpuTensor {
    const n = x.cols, y = this.tensor([rows.length, n]);
    rows.forEach((r, i) => this.rec.copy(x.buffer, r * n * F32, y.buffer, i * n * F32, n * F32));
    return y;
  }
  concatRows(parts: readonly GpuTensor[]): GpuTensor {
    const n = parts[0].cols, y = this.tensor([parts.reduce((s, p) => s + p.rows, 0), n]);
    let o = 0;
    for (const p of parts) { this.rec.copy(p.buffer, 0, y.buffer, o * F32, p.size * F32); o += p.size; }
    return y;
  }

  rope(x: GpuTensor, spec: RopeSpec): GpuTensor {
    const [T, heads, headDim] = x.shape;
    const invFreq = this.ropes.get(spec);
    let angles = this.angles.get(invFreq);
    if (!angles) this.angles.set(invFreq, (angles = this.rec.upload(ropeAngles(this.positions, invFreq), "rope angles")));
    rope(this.rec, x.buffer, T, heads, headDim, spec.dims, angles, spec.style);
    return x;
  }

  attention(q: GpuTensor, k: GpuTensor, v: GpuTensor, layer: number, opts: AttentionOptions): GpuTensor {
    const [T, heads, headDim] = q.shape, kvHeads = k.shape[1];
    const y = this.tensor([T, heads * headDim]);
    for (const { cache, start, length, pos0 } of this.segments) {
      if (!(cache instanceof GpuKVCache)) throw new ToyError("webgpu: attention needs a KV cache made by this model (model.newCache())");
      cache.write(this.rec, layer, k.buffer, v.buffer, start, length, pos0);
      attention(this.rec, q.buffer, cache.keys[layer], cache.values[layer], cache.gpuType,
        { T: length, row0: start, pos0, nKeys: pos0 + length, heads, kvHeads, headDim }, opts, y.buffer);
    }
    return y;
  }

  combineExperts(_probs: GpuTensor, _outputs: readonly ExpertResult<GpuTensor>[]): GpuTensor {
    throw new ToyError("webgpu: mixture-of-experts layers are not supported on the webgpu backend yet");
  }

  lastRows(x: GpuTensor): GpuTensor { return this.wanted ? this.gatherRows(x, this.wanted) : x; }
}
