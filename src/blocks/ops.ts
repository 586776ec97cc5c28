// The operations a forward is written in, and the two ways they run.
//
// An architecture's forward (archs/*.ts) and the blocks (this folder) are written once, against
// `Ops<X>`: weights are named by their GGUF tensor names (./tensorNames.ts), activations are
// values of type X. Two implementations run the same code:
//   - inference (./inferenceOps.ts): X = Tensor; weights as stored (quantized types stay
//     quantized), the backend's fused kernels, attention through each sequence's KV cache, no
//     tape; activations reuse the workspace's arrays (tensor/workspace.ts).
//   - training (./trainingOps.ts): X = Var on the autograd tape; float32 parameters (and LoRA
//     adapters), a batch of sequences, attention within each sequence; backward() gives every
//     parameter's gradient.

import type { AttentionOptions, RopeStyle } from "../backends/kernels.js";

/** What the forward code reads of an activation: its values and shape (Tensor and Var both). */
export interface Value {
  readonly shape: readonly number[];
  readonly data: Float32Array;
  readonly rows: number;
  readonly cols: number;
}

/** A rotary embedding's settings as a layer uses them (the frequency table is the ops' to cache). */
export interface RopeSpec {
  /** θ base: frequency of pair i is base^(−2i/dims). */
  base: number;
  /** How many dims of each head rotate. */
  dims: number;
  style: RopeStyle;
  /** Positions are multiplied by this (1 / linear scaling factor). */
  freqScale: number;
  /** Divide the frequencies by the tensor rope_freqs.weight (Llama 3). */
  freqFactors: boolean;
}

/**
 * A mixture of experts' routing (ops.topExperts): for each of `tokens` tokens, its `used` most
 * probable experts and their probabilities. The routed rows (ops.routeRows) are one per (token,
 * chosen expert), R = tokens · used of them, in an order that is the ops' own: the host keeps
 * each expert's tokens together (one product per expert), the GPU token by token (the expert id
 * of each row in a GPU buffer). What else a routing holds is the ops' too.
 */
export interface Routes {
  readonly tokens: number;
  readonly used: number;
}

export interface Ops<X extends Value> {
  /** [N] each row's position within its own sequence. */
  readonly positions: Int32Array;
  /** Whether the model has a tensor of this name. */
  has(name: string): boolean;

  /** Rows ids of an embedding table [vocab, d] → [N, d]. */
  embedding(table: string, ids: Int32Array): X;
  /** x Wᵀ + b: x [N, in], W [out, in] → [N, out]; `rows`: only rows [from, to) of W (an expert). */
  linear(x: X, weight: string, bias?: string | null, rows?: readonly [number, number]): X;
  /** linear of the same x with each weight (biases[i]: weight i's bias): one result each. The cpu
   *  backend runs them as one job (a layer's q, k, v, or gate and up), with the same results. */
  linears(x: X, weights: readonly string[], biases?: readonly (string | null)[] | null): X[];
  /** A stored tensor itself as a value [rows, dims[0]] (a class token, a table). */
  param(name: string): X;
  /** Data from outside the model (image patches) as a value. */
  input(data: Float32Array, shape: readonly number[]): X;

  rmsNorm(x: X, weight: string, eps: number): X;
  /** [a + b, rmsNorm(a + b)]: a residual sum and the next sub-block's norm of it (the cpu
   *  backend does both in one call, with the bits of add then rmsNorm). */
  addRmsNorm(a: X, b: X, weight: string, eps: number): [X, X];
  layerNorm(x: X, weight: string, bias: string | null, eps: number): X;
  add(a: X, b: X): X;
  scale(x: X, s: number): X;
  /** cap · tanh(x / cap) */
  softcap(x: X, cap: number): X;
  swiglu(gate: X, up: X): X;
  geglu(gate: X, up: X): X;
  gelu(x: X): X;
  /** Softmax over each row. */
  softmax(x: X): X;
  /** An elementwise function and its derivative: y = f(x), ∂x = f'(x) ∂y (a custom activation). */
  map(x: X, f: (v: number) => number, df: (v: number) => number): X;

  reshape(x: X, shape: readonly number[]): X;
  /** Columns [from, to) of x [N, n] (a copy). */
  sliceCols(x: X, from: number, to: number): X;
  /** Rows [from, to) of x [R, n]. */
  sliceRows(x: X, from: number, to: number): X;
  gatherRows(x: X, rows: readonly number[]): X;
  concatRows(parts: readonly X[]): X;

  /** x [N, heads, headDim] rotated at this.positions. Inference rotates x in place: do not read
   *  x after. */
  rope(x: X, spec: RopeSpec): X;
  /** rope of q [N, heads, headDim] and of k [N, kvHeads, headDim] (one call on the cpu backend;
   *  the same results as two rope calls). */
  ropePair(q: X, k: X, spec: RopeSpec): [X, X];
  /**
   * Attention of each sequence's queries to its own keys, in layer `layer`:
   * q [N, heads, headDim], k [N, kvHeads, headDim], v [N, kvHeads · headDim] → [N, heads · headDim].
   * Inference writes k, v to each sequence's KV cache and attends over all of it; training
   * attends within each sequence of the batch.
   */
  attention(q: X, k: X, v: X, layer: number, opts: AttentionOptions): X;
  /** The router's choice: probs [N, experts] → for each row its `used` most probable experts
   *  (higher probability first, ties to the lower index), with their probabilities. */
  topExperts(probs: X, used: number): Routes;
  /** The routed rows of x [N, n] → [R, n]: row t once per expert routed to t. */
  routeRows(x: X, routes: Routes): X;
  /** Each routed row times its own expert's block of a stacked weight: x [R, in] → [R, rows],
   *  expert e's block being rows [e · rows, (e + 1) · rows) of W [experts · rows, in]. */
  expertLinear(x: X, weight: string, routes: Routes, rows: number): X;
  /** y[t] = Σ_{e routed for t} p[t, e] · out[(t, e)]:  out [R, d] → [N, d] */
  combineExperts(out: X, routes: Routes): X;
  /** The rows whose outputs are wanted: inference keeps each sequence's last row when asked
   *  to; training keeps all. */
  lastRows(x: X): X;
  /** One block of the forward (a layer, or its attention): inference may reuse what it
   *  allocated, all but its result, after it returns, and `input` too, which the forward no
   *  longer reads (tensor/workspace.ts); training and the GPU just run it. */
  block(fn: () => X, input?: X): X;
}
