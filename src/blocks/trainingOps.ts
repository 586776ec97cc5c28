// Ops (./ops.ts) for training: Vars on the autograd tape, float32 parameters by GGUF name (some
// frozen, some under a LoRA adapter), B sequences of T rows each with attention inside each
// sequence. The tape's kernels (autograd/kernels) run the products.

import type { AttentionOptions } from "../backends/kernels.js";
import type { Tape, Var } from "../autograd/tape.js";
import * as A from "../autograd/ops/index.js";
import type { TrainKernels } from "../autograd/kernels/index.js";
import { expertProducts, hostRoutes, type HostRoutes } from "./hostExperts.js";
import type { Ops, RopeSpec } from "./ops.js";
import { TENSORS } from "./tensorNames.js";

/** Float32 parameters in GGUF storage order (dims[0] fastest), with their ggml dims. */
export interface Parameters {
  values: Map<string, Float32Array>;
  dims: Map<string, number[]>;
}

/** A low-rank adapter on a weight W [out, in]: the forward uses W + scale · B A. `a` names Aᵀ
 *  (ggml dims [rank, in], a Var [in, rank]) and `b` names B (ggml dims [rank, out], [out, rank]). */
export interface Adapter {
  a: string;
  b: string;
  scale: number;
}

/** Which parameters train: `frozen` ones are constants on the tape (no gradient, no update);
 *  `adapters` add a low-rank term to the weights they name (LoRA). `kernels`: the backend that
 *  runs the products (default: the ts reference). */
export interface TrainSetup {
  frozen?: ReadonlySet<string>;
  adapters?: ReadonlyMap<string, Adapter>;
  kernels?: TrainKernels;
  /** Where each trainable parameter's gradient is written, by name (filled in on first use and
   *  reused: the Trainer keeps one map across its steps); absent: fresh arrays every time. */
  gradients?: Map<string, Float32Array>;
}

/** The tape's leaves: one Var per GGUF tensor, shaped [rows, dims[0]]. */
export class ParamVars {
  private readonly vars = new Map<string, Var>();
  private readonly adapted = new Map<string, Var>();
  constructor(readonly tape: Tape, readonly p: Parameters, readonly setup: TrainSetup = {}) {}
  /** The leaf of a parameter (no adapter applied). */
  leaf(name: string): Var {
    let v = this.vars.get(name);
    if (!v) {
      const data = this.p.values.get(name), dims = this.p.dims.get(name);
      if (!data || !dims) throw new RangeError(`training: parameter ${name} is missing`);
      const shape = dims.length === 1 ? [dims[0]] : [data.length / dims[0], dims[0]];
      v = this.setup.frozen?.has(name) ? this.tape.constant(data, shape) : this.tape.param(data, shape, gradientBuffer(this.setup.gradients, name, data.length));
      this.vars.set(name, v);
    }
    return v;
  }
  /** The adapter on a weight, if any. */
  adapter(name: string): Adapter | undefined { return this.setup.adapters?.get(name); }
  /** A weight as the forward uses it: W, or W + s · B A under an adapter.  [out, in] */
  get(name: string): Var {
    const ad = this.setup.adapters?.get(name);
    if (!ad) return this.leaf(name);
    let w = this.adapted.get(name);
    if (!w) this.adapted.set(name, (w = A.add(this.leaf(name), A.scale(A.linear(this.leaf(ad.b), this.leaf(ad.a)), ad.scale))));
    return w;
  }
  has(name: string): boolean { return this.p.values.has(name); }
  entries(): [string, Var][] { return [...this.vars]; }
}

/** The reusable gradient buffer of a parameter (made on first use), or none. */
export function gradientBuffer(buffers: Map<string, Float32Array> | undefined, name: string, n: number): Float32Array | undefined {
  if (!buffers) return undefined;
  let g = buffers.get(name);
  if (!g || g.length !== n) buffers.set(name, (g = new Float32Array(n)));
  return g;
}

/** The shape of a training batch: B sequences of T rows, row b·T + t at position t. */
export interface SequenceBatch {
  batch: number;
  seq: number;
}

export class TrainingOps implements Ops<Var> {
  readonly params: ParamVars;
  readonly positions: Int32Array;
  private readonly freqs = new Map<string, Var>();

  constructor(readonly tape: Tape, params: Parameters, readonly shape: SequenceBatch, setup: TrainSetup = {}) {
    this.params = new ParamVars(tape, params, setup);
    this.positions = new Int32Array(shape.batch * shape.seq).map((_, i) => i % shape.seq);
  }

  has(name: string): boolean { return this.params.has(name); }
  embedding(table: string, ids: Int32Array): Var { return A.embedding(this.params.get(table), ids); }
  linear(x: Var, weight: string, bias?: string | null, rows?: readonly [number, number]): Var {
    const ad = rows ? undefined : this.params.adapter(weight);
    if (ad) {
      // LoRA factored: x (W + s B A)ᵀ = x Wᵀ + (s · x Aᵀ) Bᵀ. The adapter's products are [N, rank];
      // W + s B A [out, in] and its gradient (a full ∂W product per step) are never formed.
      const base = A.linear(x, this.params.leaf(weight), bias ? this.params.get(bias) : null);  // [N, out]
      const u = A.scale(A.linear(x, A.transpose(this.params.leaf(ad.a))), ad.scale);             // [N, rank]
      return A.add(base, A.linear(u, this.params.leaf(ad.b)));                                    // [N, out]
    }
    const w = this.params.get(weight);
    return A.linear(x, rows ? A.sliceRows(w, rows[0], rows[1]) : w, bias ? this.params.get(bias) : null);
  }
  linears(x: Var, weights: readonly string[], biases?: readonly (string | null)[] | null): Var[] {
    return weights.map((w, i) => this.linear(x, w, biases?.[i] ?? null));
  }
  param(name: string): Var { return this.params.get(name); }
  input(data: Float32Array, shape: readonly number[]): Var { return this.tape.constant(data, shape); }

  rmsNorm(x: Var, weight: string, eps: number): Var { return A.rmsNorm(x, this.params.get(weight), eps); }
  layerNorm(x: Var, weight: string, bias: string | null, eps: number): Var {
    return A.layerNorm(x, this.params.get(weight), bias ? this.params.get(bias) : null, eps);
  }
  add(a: Var, b: Var): Var { return A.add(a, b); }
  addRmsNorm(a: Var, b: Var, weight: string, eps: number): [Var, Var] {
    const sum = A.add(a, b);
    return [sum, this.rmsNorm(sum, weight, eps)];
  }
  scale(x: Var, s: number): Var { return A.scale(x, s); }
  softcap(x: Var, cap: number): Var { return A.softcap(x, cap); }
  swiglu(gate: Var, up: Var): Var { return A.swiglu(gate, up); }
  geglu(gate: Var, up: Var): Var { return A.geglu(gate, up); }
  gelu(x: Var): Var { return A.gelu(x); }
  softmax(x: Var): Var { return A.softmax(x); }
  map(x: Var, f: (v: number) => number, df: (v: number) => number): Var { return A.map(x, f, df); }

  reshape(x: Var, shape: readonly number[]): Var { return A.reshape(x, shape); }
  sliceCols(x: Var, from: number, to: number): Var { return A.sliceCols(x, from, to); }
  sliceRows(x: Var, from: number, to: number): Var { return A.sliceRows(x, from, to); }
  gatherRows(x: Var, rows: readonly number[]): Var { return A.gatherRows(x, rows); }
  concatRows(parts: readonly Var[]): Var { return A.concatRows(parts); }

  rope(x: Var, spec: RopeSpec): Var {
    const key = `${spec.base}/${spec.dims}/${spec.freqScale}/${spec.freqFactors}`;
    let invFreq = this.freqs.get(key);
    if (!invFreq) {
      invFreq = A.ropeFrequencies(this.tape, spec, spec.freqFactors ? this.params.get(TENSORS.ropeFreqs) : null);
      this.freqs.set(key, invFreq);
    }
    return A.rope(x, this.positions, invFreq, spec.dims, spec.style);
  }
  ropePair(q: Var, k: Var, spec: RopeSpec): [Var, Var] { return [this.rope(q, spec), this.rope(k, spec)]; }
  attention(q: Var, k: Var, v: Var, _layer: number, opts: AttentionOptions): Var {
    const [, heads, headDim] = q.shape;
    return A.attention(q, k, v, { batch: this.shape.batch, seq: this.shape.seq, heads, kvHeads: k.shape[1], headDim }, opts);
  }
  topExperts(probs: Var, used: number): HostRoutes<Var> { return hostRoutes(probs, used); }
  routeRows(x: Var, routes: HostRoutes<Var>): Var { return A.gatherRows(x, routes.order); }
  expertLinear(x: Var, weight: string, routes: HostRoutes<Var>, rows: number): Var { return expertProducts(this, x, weight, routes, rows); }
  combineExperts(out: Var, routes: HostRoutes<Var>): Var {
    const outputs = routes.experts.map(({ expert, tokens, start }) => ({ expert, tokens, out: A.sliceRows(out, start, start + tokens.length) }));
    return A.combineExperts(routes.probs, outputs, routes.tokens, out.cols);
  }
  lastRows(x: Var): Var { return x; }
  block(fn: () => Var): Var { return fn(); }
}
