// The sequence engine's training half: one batch through the decoder on a tape, the mean
// next-token cross-entropy, and the gradient of every parameter. It follows the inference
// forward (archs/llama.ts, gemma2.ts, gpt2.ts and blocks/) line for line, reading the same
// ModelConfig, with float32 parameters keyed by their GGUF tensor names.

import { isSlidingLayer, type ModelConfig } from "../archs/config.js";
import { Tape, type Var } from "../autograd/tape.js";
import type { TrainKernels } from "../autograd/kernels/index.js";
import {
  add, attention, combineExperts, crossEntropy, embedding, gatherRows, geglu, gelu, layerNorm, linear,
  reshape, rmsNorm, rope, ropeFrequencies, scale, sliceCols, sliceRows, softcap, softmax, swiglu,
  type ExpertOutput,
} from "../autograd/ops/index.js";

/** Float32 parameters in GGUF storage order (dims[0] fastest), with their ggml dims. */
export interface Parameters {
  values: Map<string, Float32Array>;
  dims: Map<string, number[]>;
}

/** B sequences of T tokens: input[b·T + t] predicts target[b·T + t] (IGNORE: not scored). */
export interface Batch {
  input: Int32Array;
  target: Int32Array;
  batch: number;
  seq: number;
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
}

export interface LossAndGradients {
  loss: number;
  /** ∂loss/∂parameter, by GGUF name, in the parameter's storage order. */
  grads: Map<string, Float32Array>;
}

/** The tape's leaves: one Var per GGUF tensor, shaped [rows, dims[0]]. */
export class ParamVars {
  private readonly vars = new Map<string, Var>();
  constructor(readonly tape: Tape, readonly p: Parameters, readonly setup: TrainSetup = {}) {}
  /** The leaf of a parameter (no adapter applied). */
  leaf(name: string): Var {
    let v = this.vars.get(name);
    if (!v) {
      const data = this.p.values.get(name), dims = this.p.dims.get(name);
      if (!data || !dims) throw new RangeError(`training: parameter ${name} is missing`);
      const shape = dims.length === 1 ? [dims[0]] : [data.length / dims[0], dims[0]];
      v = this.setup.frozen?.has(name) ? this.tape.constant(data, shape) : this.tape.param(data, shape);
      this.vars.set(name, v);
    }
    return v;
  }
  /** A weight as the forward uses it: W, or W + s · B A under an adapter.  [out, in] */
  get(name: string): Var {
    const ad = this.setup.adapters?.get(name);
    if (!ad) return this.leaf(name);
    let w = this.adapted.get(name);
    if (!w) this.adapted.set(name, (w = add(this.leaf(name), scale(linear(this.leaf(ad.b), this.leaf(ad.a)), ad.scale))));
    return w;
  }
  private readonly adapted = new Map<string, Var>();
  has(name: string): boolean { return this.p.values.has(name); }
  opt(name: string): Var | null { return this.has(name) ? this.get(name) : null; }
  entries(): [string, Var][] { return [...this.vars]; }
}

function norm(x: Var, P: ParamVars, name: string, c: ModelConfig): Var {
  return c.norm.kind === "rms"
    ? rmsNorm(x, P.get(`${name}.weight`), c.norm.eps)
    : layerNorm(x, P.get(`${name}.weight`), P.opt(`${name}.bias`), c.norm.eps);
}

/** Dense feed-forward: SwiGLU / GeGLU / GELU MLP.  x: [N, d] → [N, d] */
export function feedForward(x: Var, w: { gate?: Var; up: Var; down: Var; upBias?: Var | null; downBias?: Var | null }, kind: ModelConfig["ffn"]["kind"]): Var {
  if (kind === "mlp") return linear(gelu(linear(x, w.up, w.upBias)), w.down, w.downBias);
  const gate = linear(x, w.gate!), up = linear(x, w.up);            // [N, ffn]
  return linear(kind === "swiglu" ? swiglu(gate, up) : geglu(gate, up), w.down); // [N, d]
}

/** p = softmax(x W_routerᵀ),  y = Σ_{e ∈ topk(p)} p_e · SwiGLU_e(x)   (routing not differentiated) */
function mixtureOfExperts(x: Var, P: ParamVars, b: string, c: ModelConfig): Var {
  const N = x.rows, d = x.cols, E = c.ffn.experts, F = c.nFF;
  const probs = softmax(linear(x, P.get(`${b}.ffn_gate_inp.weight`)));   // [N, E]
  const tokens: number[][] = Array.from({ length: E }, () => []);
  for (let t = 0; t < N; t++) {
    const p = probs.data.subarray(t * E, (t + 1) * E);
    const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => p[b] - p[a] || a - b);
    for (const e of order.slice(0, c.ffn.expertsUsed)) tokens[e].push(t);
  }
  const [gate, up, down] = ["gate", "up", "down"].map((k) => P.get(`${b}.ffn_${k}_exps.weight`));
  const outputs: ExpertOutput[] = [];
  tokens.forEach((rows, e) => {
    if (rows.length === 0) return;
    const w = { gate: sliceRows(gate, e * F, (e + 1) * F), up: sliceRows(up, e * F, (e + 1) * F), down: sliceRows(down, e * d, (e + 1) * d) };
    outputs.push({ expert: e, tokens: rows, out: feedForward(gatherRows(x, rows), w, "swiglu") });
  });
  return combineExperts(probs, outputs, N, d);                       // [N, d]
}

function selfAttention(x: Var, P: ParamVars, b: string, l: number, c: ModelConfig, batch: Batch, positions: Int32Array, invFreq: Var | null): Var {
  const N = x.rows, H = c.nHead, KV = c.nKVHead, D = c.headDim, a = c.attention;
  let q: Var, k: Var, v: Var;
  if (a.fusedQKV) {
    const qkv = linear(x, P.get(`${b}.attn_qkv.weight`), a.qkvBias ? P.get(`${b}.attn_qkv.bias`) : null);
    [q, k, v] = [sliceCols(qkv, 0, H * D), sliceCols(qkv, H * D, (H + KV) * D), sliceCols(qkv, (H + KV) * D, (H + 2 * KV) * D)];
  } else {
    const bias = (n: string) => (a.qkvBias ? P.get(`${b}.attn_${n}.bias`) : null);
    q = linear(x, P.get(`${b}.attn_q.weight`), bias("q"));          // [N, H·D]
    k = linear(x, P.get(`${b}.attn_k.weight`), bias("k"));          // [N, KV·D]
    v = linear(x, P.get(`${b}.attn_v.weight`), bias("v"));          // [N, KV·D]
  }
  if (a.qkNorm) {
    const perHead = a.qkNorm === "head";
    q = rmsNorm(perHead ? reshape(q, [N * H, D]) : q, P.get(`${b}.attn_q_norm.weight`), c.norm.eps);
    k = rmsNorm(perHead ? reshape(k, [N * KV, D]) : k, P.get(`${b}.attn_k_norm.weight`), c.norm.eps);
  }
  q = reshape(q, [N, H, D]);
  k = reshape(k, [N, KV, D]);
  if (c.rope && invFreq) {
    q = rope(q, positions, invFreq, c.rope.dims, c.rope.style);
    k = rope(k, positions, invFreq, c.rope.dims, c.rope.style);
  }
  const out = attention(q, k, v, { batch: batch.batch, seq: batch.seq, heads: H, kvHeads: KV, headDim: D },
    { scale: a.scale, softcap: a.softcap, window: isSlidingLayer(c, l) ? a.window : 0, causal: true });  // [N, H·D]
  return linear(out, P.get(`${b}.attn_output.weight`), a.outBias ? P.get(`${b}.attn_output.bias`) : null); // [N, d]
}

/** The decoder on a tape: logits [B·T, vocab] and the parameter leaves. */
export function trainingForward(tape: Tape, c: ModelConfig, params: Parameters, batch: Batch, setup: TrainSetup = {}): { logits: Var; leaves: [string, Var][] } {
  const { input, batch: B, seq: T } = batch;
  if (input.length !== B * T) throw new RangeError(`training: batch of ${B}×${T} needs ${B * T} ids, got ${input.length}`);
  const P = new ParamVars(tape, params, setup);
  const positions = new Int32Array(B * T).map((_, i) => i % T);
  const factors = c.rope?.freqFactors ? P.get("rope_freqs.weight") : null;
  const invFreq = c.rope ? ropeFrequencies(tape, c.rope, factors) : null;
  const slidingInvFreq = c.rope?.sliding ? ropeFrequencies(tape, { ...c.rope, ...c.rope.sliding }, factors) : invFreq;

  let x = embedding(P.get("token_embd.weight"), input);             // [N, d]
  if (c.embedScale !== 1) x = scale(x, c.embedScale);
  if (!c.rope) x = add(x, embedding(P.get("position_embd.weight"), positions));
  for (let l = 0; l < c.nLayer; l++) {
    const b = `blk.${l}`;
    const layerInvFreq = isSlidingLayer(c, l) ? slidingInvFreq : invFreq; // Gemma 3: local layers rotate with their own base
    let h = selfAttention(norm(x, P, `${b}.attn_norm`, c), P, b, l, c, batch, positions, layerInvFreq);
    if (c.postNorms) h = norm(h, P, `${b}.post_attention_norm`, c);
    x = add(x, h);
    const g = norm(x, P, `${b}.ffn_norm`, c);
    let f = c.ffn.experts > 0
      ? mixtureOfExperts(g, P, b, c)
      : feedForward(g, {
        gate: c.ffn.kind === "mlp" ? undefined : P.get(`${b}.ffn_gate.weight`),
        up: P.get(`${b}.ffn_up.weight`), down: P.get(`${b}.ffn_down.weight`),
        upBias: c.ffn.bias ? P.get(`${b}.ffn_up.bias`) : null, downBias: c.ffn.bias ? P.get(`${b}.ffn_down.bias`) : null,
      }, c.ffn.kind);
    if (c.postNorms) f = norm(f, P, `${b}.post_ffw_norm`, c);
    x = add(x, f);                                                   // [N, d]
  }
  let logits = linear(norm(x, P, "output_norm", c), P.get(c.tiedOutput ? "token_embd.weight" : "output.weight")); // [N, vocab]
  if (c.finalSoftcap > 0) logits = softcap(logits, c.finalSoftcap);
  return { logits, leaves: P.entries() };
}

/** Mean next-token cross-entropy of a batch and ∂loss/∂θ for every trainable parameter (zeros where unused). */
export function lossAndGradients(c: ModelConfig, params: Parameters, batch: Batch, setup: TrainSetup = {}): LossAndGradients {
  const tape = new Tape(setup.kernels);
  const { logits, leaves } = trainingForward(tape, c, params, batch, setup);
  const loss = crossEntropy(logits, batch.target);
  tape.backward(loss);
  const value = loss.data[0];
  const grads = gradientsOf(params, leaves, setup);
  tape.release();
  return { loss: value, grads };
}

/** The leaves' gradients after a backward, for every trainable parameter (zeros where unused).
 *  The leaves' gradient buffers are handed over: the tape is done with them. */
export function gradientsOf(params: Parameters, leaves: [string, Var][], setup: TrainSetup): Map<string, Float32Array> {
  const grads = new Map<string, Float32Array>();
  const leafGrads = new Map(leaves.map(([name, v]) => [name, v.grad] as const));
  for (const [name, values] of params.values) {
    if (!setup.frozen?.has(name)) grads.set(name, leafGrads.get(name) ?? new Float32Array(values.length));
  }
  return grads;
}
