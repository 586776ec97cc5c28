// The kernel set a backend provides. Primitives (src/primitives) call these; model code never
// does. All activations are float32, row-major: a [T, n] matrix is T rows of n values.
// Every kernel must be deterministic: the same inputs give the same bits for any thread count.

import type { Weight } from "../tensor/weight.js";

/** webgpu runs whole forwards on a GPU (archs/gpuModel.ts), not these host kernels. */
export type Device = "ts" | "cpu" | "cuda" | "webgpu";

/** How RoPE pairs the dimensions of a head: (2i, 2i+1) for Llama, (i, i + d/2) for NEOX/Qwen. */
export type RopeStyle = "interleaved" | "neox";

export interface AttentionOptions {
  /** Multiplies q·k before the softmax (1/sqrt(headDim) unless the model says otherwise). */
  scale: number;
  /** Gemma 2: logits ← cap · tanh(logits / cap) before the mask (0 = off). */
  softcap: number;
  /** Sliding window: a query at position p sees keys at positions > p - window (0 = unlimited). */
  window: number;
  /** false: bidirectional (ViT); true: each query sees only keys at positions <= its own. */
  causal: boolean;
}

/** How a KV cache stores keys and values (llama.cpp's --cache-type-k/v): float32, half, or
 *  Q8_0 blocks of 32 values along each head (one half scale, 32 int8). */
export type KVType = "f32" | "f16" | "q8_0";

/** Cached keys or values: rows of nKVHeads · headDim values stored as `type`, one after another. */
export interface KVRows {
  type: KVType;
  bytes: Uint8Array;
}

/** One sequence of a batched attention call: rows [start, start + length) of q and out, at
 *  positions pos0.., attending to the first nKeys rows of its own cached k and v. */
export interface AttentionSegment {
  k: KVRows;
  v: KVRows;
  start: number;
  length: number;
  pos0: number;
  nKeys: number;
}

export interface Kernels {
  readonly device: Device;

  /** out[t, r] = Σ_c x[t, c] · W[r, c] for t < T, r < w.rows; x is [T, w.cols]. */
  matmul(x: Float32Array, w: Weight, T: number, out: Float32Array): void;
  /** matmul of the same x [T, cols] with each weight into outs[i], the same results, as one call
   *  (optional, any mix of types on cpu); false when this backend cannot for these weights
   *  (nothing computed). */
  matmulMany?(x: Float32Array, ws: readonly Weight[], T: number, outs: readonly Float32Array[]): boolean;

  /** out[t, :] = W[ids[t], :] (dequantized), for an embedding table W of w.rows rows. */
  getRows(w: Weight, ids: Int32Array, out: Float32Array): void;

  /** out[t] = x[t] / sqrt(mean(x[t]²) + eps) ⊙ weight, over rows of length n. */
  rmsNorm(x: Float32Array, weight: Float32Array, rows: number, n: number, eps: number, out: Float32Array): void;

  /** out[t] = (x[t] - mean) / sqrt(var + eps) ⊙ weight + bias, over rows of length n. */
  layerNorm(x: Float32Array, weight: Float32Array, bias: Float32Array | null, rows: number, n: number, eps: number, out: Float32Array): void;

  /**
   * Rotary position embedding, in place, on x of shape [T, nHeads, headDim].
   * Pair i of a head at position p turns by angle p · invFreq[i], i < ropeDims/2
   * (invFreq already includes any RoPE scaling); dims past ropeDims are left alone.
   */
  rope(x: Float32Array, T: number, nHeads: number, headDim: number, ropeDims: number, positions: Int32Array, invFreq: Float32Array, style: RopeStyle): void;

  /**
   * Scaled dot-product attention of T queries against the first `nKeys` cached keys.
   * q: [T, nHeads, headDim]; k, v: [>= nKeys, nKVHeads, headDim] in their storage type; query t
   * sits at position pos0 + t; key j at position j. Head h reads KV head floor(h / (nHeads / nKVHeads)).
   * out: [T, nHeads, headDim].
   */
  attention(q: Float32Array, k: KVRows, v: KVRows, T: number, pos0: number, nKeys: number, nHeads: number, nKVHeads: number, headDim: number, opts: AttentionOptions, out: Float32Array): void;

  /**
   * Optional: `attention` for several sequences (each over its own cache, all of one KV type) in
   * one call, so a batch pays one dispatch per layer instead of one per sequence. Each row must
   * get exactly the bits `attention` gives it alone. q, out: [rows, nHeads, headDim].
   */
  attentionBatch?(q: Float32Array, segments: readonly AttentionSegment[], nHeads: number, nKVHeads: number, headDim: number, opts: AttentionOptions, out: Float32Array): void;

  /** Write x (whole rows of cached keys or values) as `type` into dst from byte `byteOffset`
   *  (ggml's encoders: F16 rounds to nearest even; Q8_0 d = amax/127, q = round(x / d)). */
  storeKV(x: Float32Array, type: KVType, dst: Uint8Array, byteOffset: number): void;

  /** out = silu(gate) ⊙ up  (SwiGLU's combination). */
  swiglu(gate: Float32Array, up: Float32Array, out: Float32Array): void;

  /** out = gelu(gate) ⊙ up, GELU with the tanh approximation (GeGLU). */
  geglu(gate: Float32Array, up: Float32Array, out: Float32Array): void;

  /** out = gelu(x), tanh approximation. */
  gelu(x: Float32Array, out: Float32Array): void;

  /** out = a + b, elementwise (out may alias a). */
  add(a: Float32Array, b: Float32Array, out: Float32Array): void;
  /** out = x · s, each product rounded from double to float32 (as JavaScript multiplies). */
  scale(x: Float32Array, s: number, out: Float32Array): void;

  /** Softmax over each row of length n, in place. */
  softmax(x: Float32Array, rows: number, n: number): void;

  // Optional fused calls: each gives the bits of the calls it stands for, in one call (fewer
  // calls per decode step). Primitives fall back to those calls where a backend has none.

  /** rope of q [T, qHeads, headDim] and then of k [T, kHeads, headDim], at the same positions. */
  ropePair?(q: Float32Array, k: Float32Array, T: number, qHeads: number, kHeads: number, headDim: number, ropeDims: number,
    positions: Int32Array, invFreq: Float32Array, style: RopeStyle): void;
  /** storeKV of k into kDst and of v into vDst, both from byte `byteOffset`. */
  storeKVPair?(k: Float32Array, v: Float32Array, type: KVType, kDst: Uint8Array, vDst: Uint8Array, byteOffset: number): void;
  /** sum = a + b, then out = rmsNorm(sum) over rows of length n. */
  addRmsNorm?(a: Float32Array, b: Float32Array, weight: Float32Array, rows: number, n: number, eps: number, sum: Float32Array, out: Float32Array): void;

  /** `bytes` zeroed bytes on transparent huge pages (one TLB entry per 2 MB, not per 4 KB), for a
   *  buffer that every decode step reads through (the KV cache); null where there are none. */
  allocHugePages?(bytes: number): Uint8Array | null;

  /**
   * Run fn and record the kernel calls it makes, to run them again later by one call (a decode
   * step: archs/decodeReplay.ts). What changes between replays must be in memory the calls read:
   * their typed arrays, and the KV cache's row of each layer (`kv.rows`), to which the cache's
   * calls are bound. result(out): fn's output, which the caller keeps; a replay writes `logits`
   * instead. plan: the replayable recording, or why there is none.
   */
  recordStep?<R>(kv: StepKV, fn: () => R, result: (out: R) => Float32Array, logits: Float32Array): { out: R; plan: StepPlan | string };
}

/** The KV cache a recorded step writes: each layer's memory, row size, and the step's row. */
export interface StepKV {
  keys: Uint8Array[];
  values: Uint8Array[];
  rowBytes: Float64Array;
  /** Layer l's row for the step: read again by every replay, so the caller updates it before one. */
  rows: Int32Array;
}

/** A recorded step (Kernels.recordStep). */
export interface StepPlan {
  /** The recorded calls again, the step's logits into `into` (recordStep's `logits` or any other
   *  array of their length: the replay writes there directly). */
  run(into: Float32Array): void;
}
