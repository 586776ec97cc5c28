// Ops (./ops.ts) for inference: Tensors, weights as stored (quantized types stay quantized; the
// backend's kernels read them), attention through each sequence's KV cache, no tape. Every
// output comes from Tensor.zeros, so forwards reuse the workspace's arrays
// (tensor/workspace.ts).

import type { AttentionOptions, Device } from "../backends/kernels.js";
import * as P from "../primitives/index.js";
import { ropeInvFreq } from "../primitives/rope.js";
import { Tensor } from "../tensor/tensor.js";
import { scoped } from "../tensor/workspace.js";
import type { Weight } from "../tensor/weight.js";
import type { Segment } from "./kvCache.js";
import { expertProducts, hostRoutes, type HostRoutes } from "./hostExperts.js";
import type { Ops, RopeSpec } from "./ops.js";
import { attendThroughCache } from "./selfAttention.js";
import { TENSORS } from "./tensorNames.js";

/** A model's stored tensors by GGUF name (archs/weights.ts reads them from a file). */
export interface StoredWeights {
  has(name: string): boolean;
  /** A matrix as stored; `rows`: rows [from, to) of it (no copy). */
  matrix(name: string, rows?: readonly [number, number]): Weight;
  /** A vector (norm weight, bias), or any tensor's values, as float32. */
  vector(name: string): Float32Array;
}

/** RoPE frequency tables, by the settings that make them (kept with the model). */
export class RopeTables {
  private readonly tables = new Map<string, Float32Array>();
  /** The same spec object again (layer configs are made once per model): no key to build. */
  private readonly bySpec = new WeakMap<RopeSpec, Float32Array>();
  constructor(private readonly weights: StoredWeights) {}
  get(s: RopeSpec): Float32Array {
    let t = this.bySpec.get(s);
    if (t) return t;
    const key = `${s.base}/${s.dims}/${s.freqScale}/${s.freqFactors}`;
    t = this.tables.get(key);
    if (!t) this.tables.set(key, (t = ropeInvFreq({ ...s, freqFactors: s.freqFactors ? this.weights.vector(TENSORS.ropeFreqs) : null })));
    this.bySpec.set(s, t);
    return t;
  }
}

export class InferenceOps implements Ops<Tensor> {
  /**
   * Whether an op computed in TypeScript (not in the backend's kernels): a recorded decode step
   * (archs/decodeReplay.ts) replays only kernel calls, so such a forward is never replayed.
   */
  computedInScript = false;

  constructor(
    private readonly weights: StoredWeights,
    private readonly ropes: RopeTables,
    readonly device: Device,
    /** The sequences whose rows make up the batch. */
    private readonly segments: readonly Segment[],
    readonly positions: Int32Array,
    /** The rows whose logits are wanted (null: all). */
    private readonly wanted: number[] | null = null,
  ) {}

  has(name: string): boolean { return this.weights.has(name); }
  embedding(table: string, ids: Int32Array): Tensor { return P.embedding(this.weights.matrix(table), ids, this.device); }
  linear(x: Tensor, weight: string, bias?: string | null, rows?: readonly [number, number]): Tensor {
    return P.matmul(x, this.weights.matrix(weight, rows), bias ? this.weights.vector(bias) : undefined);
  }
  linears(x: Tensor, weights: readonly string[], biases?: readonly (string | null)[] | null): Tensor[] {
    return P.matmulMany(x, weights.map((w) => this.weights.matrix(w)), weights.map((_, i) => {
      const b = biases?.[i];
      return b ? this.weights.vector(b) : undefined;
    }));
  }
  param(name: string): Tensor {
    const w = this.weights.matrix(name);
    return new Tensor(w.dims.length === 1 ? [w.cols] : [w.rows, w.cols], this.weights.vector(name), this.device);
  }
  input(data: Float32Array, shape: readonly number[]): Tensor { this.computedInScript = true; return new Tensor(shape, data, this.device); } // the caller's values

  rmsNorm(x: Tensor, weight: string, eps: number): Tensor { return P.rmsNorm(x, this.weights.vector(weight), eps); }
  addRmsNorm(a: Tensor, b: Tensor, weight: string, eps: number): [Tensor, Tensor] { return P.addRmsNorm(a, b, this.weights.vector(weight), eps); }
  layerNorm(x: Tensor, weight: string, bias: string | null, eps: number): Tensor {
    return P.layerNorm(x, this.weights.vector(weight), bias ? this.weights.vector(bias) : null, eps);
  }
  add(a: Tensor, b: Tensor): Tensor { return P.add(a, b); }
  scale(x: Tensor, s: number): Tensor { return P.scale(x, s); }
  softcap(x: Tensor, cap: number): Tensor { this.computedInScript = true; return P.softcap(x, cap); }
  swiglu(gate: Tensor, up: Tensor): Tensor { return P.swiglu(gate, up); }
  geglu(gate: Tensor, up: Tensor): Tensor { return P.geglu(gate, up); }
  gelu(x: Tensor): Tensor { return P.gelu(x); }
  softmax(x: Tensor): Tensor { return P.softmax(x); }
  map(x: Tensor, f: (v: number) => number): Tensor {
    this.computedInScript = true;
    const y = x.like();
    for (let i = 0; i < x.size; i++) y.data[i] = f(x.data[i]);
    return y;
  }

  reshape(x: Tensor, shape: readonly number[]): Tensor { return x.reshape(shape); }
  sliceCols(x: Tensor, from: number, to: number): Tensor {
    this.computedInScript = true;
    const N = x.rows, n = x.cols, w = to - from, y = x.like([N, w]);
    for (let r = 0; r < N; r++) y.data.set(x.data.subarray(r * n + from, r * n + to), r * w);
    return y;
  }
  sliceRows(x: Tensor, from: number, to: number): Tensor { return x.reshape([x.rows, x.cols]).sliceRows(from, to); }
  gatherRows(x: Tensor, rows: readonly number[]): Tensor { this.computedInScript = true; return P.gatherRows(x, rows); }
  concatRows(parts: readonly Tensor[]): Tensor {
    this.computedInScript = true;
    const n = parts[0].cols, y = parts[0].like([parts.reduce((s, p) => s + p.rows, 0), n]);
    let o = 0;
    for (const p of parts) { y.data.set(p.data, o); o += p.size; }
    return y;
  }

  rope(x: Tensor, spec: RopeSpec): Tensor {
    return P.rope(x, this.positions, this.ropes.get(spec), spec);
  }
  ropePair(q: Tensor, k: Tensor, spec: RopeSpec): [Tensor, Tensor] {
    return P.ropePair(q, k, this.positions, this.ropes.get(spec), spec);
  }
  attention(q: Tensor, k: Tensor, v: Tensor, layer: number, opts: AttentionOptions): Tensor {
    return attendThroughCache(q, k, v, this.segments, layer, k.shape[1], opts);
  }
  topExperts(probs: Tensor, used: number): HostRoutes<Tensor> { this.computedInScript = true; return hostRoutes(probs, used); }
  routeRows(x: Tensor, routes: HostRoutes<Tensor>): Tensor { this.computedInScript = true; return P.gatherRows(x, routes.order); }
  expertLinear(x: Tensor, weight: string, routes: HostRoutes<Tensor>, rows: number): Tensor { return expertProducts(this, x, weight, routes, rows); }
  combineExperts(out: Tensor, routes: HostRoutes<Tensor>): Tensor {
    this.computedInScript = true;
    const { probs } = routes, E = probs.cols, d = out.cols, y = out.like([routes.tokens, d]);
    for (const { expert, tokens, start } of routes.experts) {
      tokens.forEach((t, i) => {
        const p = probs.data[t * E + expert];
        for (let j = 0; j < d; j++) y.data[t * d + j] += p * out.data[(start + i) * d + j];
      });
    }
    return y;
  }
  lastRows(x: Tensor): Tensor {
    const w = this.wanted;
    if (!w || (w.length === x.rows && w.every((r, i) => r === i))) return x; // every row, in order (a decode step)
    this.computedInScript = true;
    return P.gatherRows(x, w);
  }
  block(fn: () => Tensor, input?: Tensor): Tensor { return scoped(fn, (y) => y.data, input?.data); }
}
