// Ops (./ops.ts) on the GPU (the webgpu backend): the same forward code (archs/*.ts) as
// inference on the host, with X = GpuTensor. Every operation records its kernels
// (backends/webgpu/*.ts) into the forward's Recorder (backends/webgpu/runtime.ts); nothing
// runs until the forward is submitted, as one command buffer.
//
// Products of weights are recorded lazily, so that one dispatch can do the work of several
// (backends/webgpu/matmul.ts): the linear layers of one input (`linears`: q, k, v; gate, up)
// are one pending group; a gated unit (swiglu, geglu) of that group's two outputs, or a sum with
// a single product's output (the residual), becomes the group's epilogue. Likewise two rotations
// in a row (q, then k) are one dispatch. Every other operation first records what is pending
// (the `rec` getter), so the order of the work never changes.

import type { AttentionOptions } from "../backends/kernels.js";
import { attention } from "../backends/webgpu/attention.js";
import { combineExperts } from "../backends/webgpu/combineExperts.js";
import { copyCols } from "../backends/webgpu/copyCols.js";
import { expertMatmul } from "../backends/webgpu/expertMatmul.js";
import { binary, unary } from "../backends/webgpu/elementwise.js";
import { getRows } from "../backends/webgpu/getRows.js";
import { matmulGroup, storageBindings, type Epilogue, type MatmulTerm } from "../backends/webgpu/matmul.js";
import { layerNorm, rmsNorm } from "../backends/webgpu/norms.js";
import { repeatRows } from "../backends/webgpu/repeatRows.js";
import { rope, ropeAngles, type RopeTarget } from "../backends/webgpu/rope.js";
import type { Recorder } from "../backends/webgpu/runtime.js";
import { softmax } from "../backends/webgpu/softmax.js";
import { GpuTensor } from "../backends/webgpu/tensor.js";
import { maxExpertTiles, topExperts } from "../backends/webgpu/topExperts.js";
import type { GpuWeights } from "../backends/webgpu/weights.js";
import { ToyError } from "../errors.js";
import { GpuKVCache } from "./gpuKVCache.js";
import type { RopeTables } from "./inferenceOps.js";
import type { Segment } from "./kvCache.js";
import type { Ops, RopeSpec, Routes } from "./ops.js";

const F32 = 4;

/** Products recorded lazily: all read x [T, K]; recorded with their epilogue by flush(). */
interface PendingProducts {
  x: GPUBuffer;
  T: number;
  terms: MatmulTerm[];
}

/** A mixture of experts' routing on the GPU: token t's s-th expert and its probability at
 *  t · used + s (routed rows go token by token), and the routed rows in tiles by expert. */
interface GpuRoutes extends Routes {
  ids: GPUBuffer;
  weights: GPUBuffer;
  tiles: GPUBuffer;
  maxTiles: number;
}

/** A rotation recorded lazily (joined by the next one of the same rows and frequencies). */
interface PendingRope {
  x: RopeTarget;
  T: number;
  headDim: number;
  spec: RopeSpec;
  angles: GPUBuffer;
}

export class GpuOps implements Ops<GpuTensor> {
  /** This forward's RoPE angles, per frequency table. */
  private readonly angles = new Map<Float32Array, GPUBuffer>();
  private pending: PendingProducts | null = null;
  private pendingRope: PendingRope | null = null;

  constructor(
    private readonly recorder: Recorder,
    private readonly weights: GpuWeights,
    private readonly ropes: RopeTables,
    private readonly segments: readonly Segment[],
    readonly positions: Int32Array,
    /** The rows whose outputs are wanted (null: all). */
    private readonly wanted: number[] | null,
  ) {}

  /** The recorder, with what is pending (products, a rotation) recorded first. */
  private get rec(): Recorder {
    this.flush();
    return this.recorder;
  }

  /** Record what is pending (products with `epilogue`); the forward's last step calls it too. */
  flush(epilogue: Epilogue = { kind: "none" }): void {
    const p = this.pending, r = this.pendingRope;
    this.pending = this.pendingRope = null;
    if (p) matmulGroup(this.recorder, p.x, p.T, p.terms, epilogue);
    if (r) rope(this.recorder, [r.x], r.T, r.headDim, r.spec.dims, r.angles, r.spec.style);
  }

  /** Whether one dispatch may do the pending products and `more` (another term, an epilogue). */
  private canJoin(p: PendingProducts, terms: number, epilogue: Epilogue["kind"]): boolean {
    const limit = this.recorder.rt.device.limits.maxStorageBuffersPerShaderStage;
    return this.recorder.rt.fuse && storageBindings(terms, epilogue) <= limit && (terms === 1 ||
      p.terms.every((t) => !t.bias && t.w.parts.length === 1 && t.w.type === p.terms[0].w.type && t.w.cols === p.terms[0].w.cols));
  }

  private tensor(shape: readonly number[], label?: string): GpuTensor {
    return new GpuTensor(shape, this.recorder.buffer(shape.reduce((a, b) => a * b, 1) * F32, label));
  }

  has(name: string): boolean { return this.weights.has(name); }

  embedding(table: string, ids: Int32Array): GpuTensor {
    const w = this.weights.matrix(table);
    for (const id of ids) if (!(id >= 0 && id < w.rows)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${w.rows - 1})`);
    const y = this.tensor([ids.length, w.cols], table);
    getRows(this.rec, w, this.rec.upload(ids, "ids"), ids.length, y.buffer);
    return y;
  }

  /** The products of one input (q, k, v; gate, up): one pending group when one dispatch may hold them. */
  linears(x: GpuTensor, weights: readonly string[], biases?: readonly (string | null)[] | null): GpuTensor[] {
    const made = weights.map((w, i) => this.product(x, w, biases?.[i] ?? null));
    const group = { x: x.buffer, T: x.rows, terms: made.map((m) => m.term) };
    this.flush();
    if (made.length <= 3 && this.canJoin(group, made.length, "none")) this.pending = group;
    else for (const term of group.terms) { this.flush(); this.pending = { ...group, terms: [term] }; }
    return made.map((m) => m.y);
  }
  linear(x: GpuTensor, weight: string, bias?: string | null, rows?: readonly [number, number]): GpuTensor {
    if (rows) throw new ToyError("webgpu: a block of a weight's rows (an expert's) runs through ops.expertLinear on the webgpu backend");
    const { y, term } = this.product(x, weight, bias ?? null);
    this.flush();
    this.pending = { x: x.buffer, T: x.rows, terms: [term] };
    return y;
  }
  /** The output tensor of x Wᵀ (+ b) and its term, not yet recorded. */
  private product(x: GpuTensor, weight: string, bias: string | null): { y: GpuTensor; term: MatmulTerm } {
    const w = this.weights.matrix(weight);
    const y = this.tensor([x.rows, w.rows], weight);
    return { y, term: { w, bias: bias ? this.weights.vector(bias) : null, y: y.buffer } };
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
  /** add (a product's epilogue where it can be) and then rmsNorm: two dispatches. */
  addRmsNorm(a: GpuTensor, b: GpuTensor, weight: string, eps: number): [GpuTensor, GpuTensor] {
    const sum = this.add(a, b);
    return [sum, this.rmsNorm(sum, weight, eps)];
  }
  layerNorm(x: GpuTensor, weight: string, bias: string | null, eps: number): GpuTensor {
    const y = this.tensor(x.shape);
    layerNorm(this.rec, x.buffer, this.weights.vector(weight), bias ? this.weights.vector(bias) : null, x.rows, x.cols, eps, y.buffer);
    return y;
  }

  add(a: GpuTensor, b: GpuTensor): GpuTensor {
    // y + r as the epilogue of the product y (a sum of y with itself is not: r would be written).
    const p = this.pending, y = p?.terms.length === 1 ? p.terms[0].y : null;
    if (p && y && a.buffer !== b.buffer && (a.buffer === y || b.buffer === y) && a.size === b.size && this.canJoin(p, 1, "residual")) {
      const z = this.tensor(a.shape);
      this.flush({ kind: "residual", r: a.buffer === y ? b.buffer : a.buffer, z: z.buffer });
      return z;
    }
    return this.binary("add", a, b);
  }
  swiglu(gate: GpuTensor, up: GpuTensor): GpuTensor { return this.gated("swiglu", gate, up); }
  geglu(gate: GpuTensor, up: GpuTensor): GpuTensor { return this.gated("geglu", gate, up); }

  /** act(gate) · up: the epilogue of the pending pair of products gate, up when they are one. */
  private gated(act: "swiglu" | "geglu", gate: GpuTensor, up: GpuTensor): GpuTensor {
    const p = this.pending;
    if (p?.terms.length === 2 && p.terms[0].y === gate.buffer && p.terms[1].y === up.buffer && gate.size === up.size && this.canJoin(p, 2, "gated")) {
      const z = this.tensor(gate.shape);
      this.flush({ kind: "gated", act, z: z.buffer });
      return z;
    }
    return this.binary(act, gate, up);
  }
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
    const r = this.pendingRope;
    if (r && this.recorder.rt.fuse && r.x.buffer !== x.buffer && r.T === T && r.headDim === headDim && r.angles === angles && r.spec.dims === spec.dims && r.spec.style === spec.style) {
      this.pendingRope = null;
      rope(this.recorder, [r.x, { buffer: x.buffer, heads }], T, headDim, spec.dims, angles, spec.style);
    } else {
      this.flush();
      this.pendingRope = { x: { buffer: x.buffer, heads }, T, headDim, spec, angles };
    }
    return x;
  }

  /** The two rotations join into one dispatch (rope's pending rotation). */
  ropePair(q: GpuTensor, k: GpuTensor, spec: RopeSpec): [GpuTensor, GpuTensor] {
    return [this.rope(q, spec), this.rope(k, spec)];
  }

  attention(q: GpuTensor, k: GpuTensor, v: GpuTensor, layer: number, opts: AttentionOptions): GpuTensor {
    const [T, heads, headDim] = q.shape, kvHeads = k.shape[1];
    const y = this.tensor([T, heads * headDim]);
    for (const { cache, start, length, pos0 } of this.segments) {
      if (!(cache instanceof GpuKVCache)) throw new ToyError("webgpu: attention needs a KV cache made by this model (model.newCache())");
      cache.write(this.rec, layer, k.buffer, v.buffer, start, length, pos0);
      attention(this.rec, q.buffer, cache.gpuType === "q8_0" ? cache.q8(layer) : { keys: cache.keys[layer], values: cache.values[layer] }, cache.gpuType,
        { T: length, row0: start, pos0, nKeys: pos0 + length, heads, kvHeads, headDim }, opts, y.buffer);
    }
    return y;
  }

  topExperts(probs: GpuTensor, used: number): GpuRoutes {
    const T = probs.rows, maxTiles = maxExpertTiles(T * used, probs.cols);
    const ids = this.recorder.buffer(T * used * 4, "expert ids"), weights = this.recorder.buffer(T * used * F32, "expert weights");
    const tiles = this.recorder.buffer((1 + 5 * maxTiles) * 4, "expert tiles");
    topExperts(this.rec, probs.buffer, T, probs.cols, used, ids, weights, tiles);
    return { tokens: T, used, ids, weights, tiles, maxTiles };
  }
  routeRows(x: GpuTensor, routes: GpuRoutes): GpuTensor {
    const y = this.tensor([x.rows * routes.used, x.cols], "routed rows");
    repeatRows(this.rec, x.buffer, x.rows, x.cols, routes.used, y.buffer);
    return y;
  }
  expertLinear(x: GpuTensor, weight: string, routes: GpuRoutes, rows: number): GpuTensor {
    const w = this.weights.matrix(weight);
    const y = this.tensor([x.rows, rows], weight);
    expertMatmul(this.rec, x.buffer, routes.tiles, routes.maxTiles, w, rows, y.buffer);
    return y;
  }
  combineExperts(out: GpuTensor, routes: GpuRoutes): GpuTensor {
    const y = this.tensor([routes.tokens, out.cols], "experts' sum");
    combineExperts(this.rec, out.buffer, routes.weights, routes.tokens, routes.used, out.cols, y.buffer);
    return y;
  }

  lastRows(x: GpuTensor): GpuTensor { return this.wanted ? this.gatherRows(x, this.wanted) : x; }
  block(fn: () => GpuTensor): GpuTensor { return fn(); }
}
