// The shape of the native addon (build/Release/toy_native.node, built from native/ by node-gyp).

export interface NativeAddon {
  matmul(x: Float32Array, w: Uint8Array, type: number, rows: number, cols: number, T: number, out: Float32Array): void;
  /** matmul on the bytes repack() returned (same results). */
  matmulPacked(x: Float32Array, packed: Uint8Array, type: number, rows: number, cols: number, T: number, out: Float32Array): void;
  /**
   * matmul (packed 1: matmulPacked) of the same x [T, cols] with each weight, one pool job: desc
   * holds [type, rows, packed] per weight. False (nothing computed) when their activations are
   * quantized differently.
   */
  matmulMulti(x: Float32Array, cols: number, T: number, weights: Uint8Array[], desc: Int32Array, outs: readonly Float32Array[]): boolean;
  /** The weight in the layout this CPU's widest kernels stream best, or undefined when there is none. */
  repack(w: Uint8Array, type: number, rows: number, cols: number): Uint8Array | undefined;
  /** Zeroed bytes of their own mapping on transparent huge pages, or null (native/addon.c). */
  allocHugePages(bytes: number): Uint8Array | null;
  /** packed 1: w is repack()'s copy of the weight. */
  getRows(w: Uint8Array, type: number, rows: number, cols: number, ids: Int32Array, out: Float32Array, packed?: number): void;
  rmsNorm(x: Float32Array, weight: Float32Array, rows: number, n: number, eps: number, out: Float32Array): void;
  layerNorm(x: Float32Array, weight: Float32Array, bias: Float32Array | null, rows: number, n: number, eps: number, out: Float32Array): void;
  /** rope of q, then of k (same positions), in one call. */
  ropePair(q: Float32Array, k: Float32Array, T: number, qHeads: number, kHeads: number, headDim: number, ropeDims: number, positions: Int32Array,
    invFreq: Float32Array, neox: number): void;
  /** storeKV of k into kDst and of v into vDst at the same offset, in one call. */
  storeKVPair(k: Float32Array, v: Float32Array, kvType: number, kDst: Uint8Array, vDst: Uint8Array, dstOffset: number): void;
  /** sum = a + b, out = rmsNorm(sum), in one call. */
  addRmsNorm(a: Float32Array, b: Float32Array, weight: Float32Array, rows: number, n: number, eps: number, sum: Float32Array, out: Float32Array): void;
  rope(x: Float32Array, T: number, nHeads: number, headDim: number, ropeDims: number, positions: Int32Array, invFreq: Float32Array, neox: number): void;
  /** kvType: ggml's id of the cache's type (0 f32, 1 f16, 8 q8_0). */
  attention(q: Float32Array, k: Uint8Array, v: Uint8Array, kvType: number, T: number, pos0: number, nKeys: number, nHeads: number, nKVHeads: number, headDim: number,
    scale: number, softcap: number, window: number, causal: number, out: Float32Array): void;
  /**
   * attention for several sequences in one call: segs holds [start, T, pos0, nKeys] per sequence
   * (its rows of q and out), keys[s] / values[s] its cache; each row gets the bits attention gives it alone.
   */
  attentionBatch(q: Float32Array, kvType: number, segs: Int32Array, keys: Uint8Array[], values: Uint8Array[], nHeads: number, nKVHeads: number, headDim: number,
    scale: number, softcap: number, window: number, causal: number, out: Float32Array): void;
  /** x as KV-cache rows of type kvType (0 f32, 1 f16, 8 q8_0), written into dst from byte dstOffset. */
  storeKV(x: Float32Array, kvType: number, dst: Uint8Array, dstOffset: number): void;
  swiglu(gate: Float32Array, up: Float32Array, out: Float32Array): void;
  geglu(gate: Float32Array, up: Float32Array, out: Float32Array): void;
  gelu(x: Float32Array, out: Float32Array): void;
  add(a: Float32Array, b: Float32Array, out: Float32Array): void;
  softmax(x: Float32Array, rows: number, n: number): void;
  /** The index of x's first largest entry, as engines/sampling.ts argmax finds it (absent from addons built before it). */
  argmax?(x: Float32Array): number;
  /** engines/sampling.ts topIds' heap of x's k best entries (0 < k ≤ x.length), written to heap[0..k) (absent from addons built before it). */
  topKHeap?(x: Float32Array, k: number, heap: Int32Array): void;
  /** Every row of a stored matrix as float32 (ggml's dequantization formulas). */
  dequantize(w: Uint8Array, type: number, rows: number, cols: number, out: Float32Array): void;
  mapFile(path: string): Uint8Array;
  setThreads(n: number): void;
  /** simd: the inference kernels' instruction set; gemm: the training GEMM's; bf16: BF16 weights
   *  times bf16-rounded activations (vdpbf16ps). */
  info(): { simd: string; gemm: string; threads: number; bf16: boolean };
  /** C (+)= op(A) · op(B) in float32: op(A) is M × K, op(B) K × N (transposed when trans = 1). */
  gemm(a: Float32Array, lda: number, transA: number, b: Float32Array, ldb: number, transB: number, c: Float32Array, ldc: number,
    M: number, N: number, K: number, accumulate: number): void;
  /** Training attention: out [B·T, H·D] and the softmax probs [B, H, T, T]. */
  attentionTrain(B: number, T: number, H: number, KV: number, D: number, scale: number, softcap: number, window: number, causal: number,
    q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array, probs: Float32Array): void;
  /** dq, dk, dv += attention's gradients at ∂out. */
  attentionTrainBackward(B: number, T: number, H: number, KV: number, D: number, scale: number, softcap: number, window: number, causal: number,
    q: Float32Array, k: Float32Array, v: Float32Array, probs: Float32Array, dout: Float32Array, dq: Float32Array, dk: Float32Array, dv: Float32Array): void;
  /** ∂gate += act'(gate) up ∂y, ∂up += act(gate) ∂y; act 0: SiLU, 1: GELU (tanh). Null: not wanted. */
  gatedBackward(act: number, gate: Float32Array, up: Float32Array, dy: Float32Array, dgate: Float32Array | null, dup: Float32Array | null): void;
  /** RMSNorm's gradients added into dx [rows, n] and dg [n] (null: not wanted). */
  rmsNormBackward(dy: Float32Array, x: Float32Array, g: Float32Array, rows: number, n: number, eps: number, dx: Float32Array | null, dg: Float32Array | null): void;
  /** RoPE's gradients, from the forward's output y: dx [N, heads, headDim] and dinv [dims / 2] (null: not wanted). */
  ropeBackward(dy: Float32Array, y: Float32Array, N: number, heads: number, headDim: number, dims: number, positions: Int32Array, invFreq: Float32Array,
    neox: number, dx: Float32Array | null, dinv: Float32Array | null): void;
  /** lse[t] = log Σ exp z_t of each scored row; returns Σ (lse[t] − z_t[target_t]). */
  crossEntropy(z: Float32Array, targets: Int32Array, N: number, V: number, ignore: number, lse: Float64Array): number;
  /** ∂z_t += g (softmax(z_t) − onehot(target_t)) of each scored row. */
  crossEntropyBackward(z: Float32Array, targets: Int32Array, lse: Float64Array, N: number, V: number, ignore: number, g: number, dz: Float32Array): void;
  /** One AdamW update in place (src/optim/adamw.ts, to the bit). */
  adamw(theta: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, b1: number, b2: number, eps: number, decay: number, stepSize: number, bc2: number, gradScale: number): void;
  /** Σ x² in double. */
  sumSquares(x: Float32Array): number;
  /** x ← x · s, or out = x · s (each product rounded from double, as in JavaScript). */
  scale(x: Float32Array, s: number, out?: Float32Array): void;
  /** dst += src. */
  accumulate(dst: Float32Array, src: Float32Array): void;
  /**
   * Record the kernel calls from now until planEnd (native/plan.c): keys[l] / values[l] the KV
   * cache's memory of layer l, rows[l] its row for the step (read again by every replay).
   * keep: where the recorded calls' arrays go; the caller keeps it, rowBytes and rows with the plan.
   * (The three plan functions are absent from addons built before them.)
   */
  planBegin?(keep: unknown[], keys: Uint8Array[], values: Uint8Array[], rowBytes: Float64Array, rows: Int32Array): void;
  /** Stop recording: the plan (result's memory replaced by logits'), or why it cannot be replayed. null: the recorded code failed. */
  planEnd?(result: Float32Array | null, logits: Float32Array | null): object | string;
  /** The recorded calls again, in order; the step's logits into `logits` (the recording's own
   *  array or another of its length). */
  planRun?(plan: object, logits: Float32Array): void;
  /** Memory read bandwidth in bytes/s with `threads` threads (for the benchmark's bound). */
  readBandwidth(threads: number): number;
  /** Bytes of one row of `cols` values of `type` (0: unsupported). */
  rowBytes(type: number, cols: number): number;
}
