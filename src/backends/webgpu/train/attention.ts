// Attention for training, forward and backward, over q [B·T, H, D], k, v [B·T, KV, D] (grouped
// queries: head h reads KV head h / (H / KV)); causal or not, a sliding window, Gemma 2's
// soft-cap, as the cpu kernel (native/attention_train.c). The forward keeps the softmax P
// [B, H, T, T] (zeros outside each query's keys) for the backward.
//   forward:  one thread per query row: scores, softmax, P · V.
//   backward: dS = P ⊙ (∂P − Σ P ∂P) (times the soft-cap's derivative and the scale), one thread
//             per query row; then ∂q = dS K, one thread per value of q; then ∂k = dSᵀ q and
//             ∂v = Pᵀ ∂y, one thread per value of k, summing over the group's heads and queries.
// No atomics: every sum is one thread's loop in a fixed order, so the same bits on every run.

import { GRID_WGSL, type Recorder } from "../runtime.js";

const COMMON = /* wgsl */ `
struct Params { B: u32, T: u32, H: u32, KV: u32, D: u32, window: u32, causal: u32, scale: f32, softcap: f32 }
@group(0) @binding(0) var<uniform> p: Params;

/** Keys seen by query t: first_key(t) ..= last_key(t). */
fn first_key(t: u32) -> u32 { if (p.window > 0u && t + 1u > p.window) { return t + 1u - p.window; } return 0u; }
fn last_key(t: u32) -> u32 { if (p.causal == 1u) { return t; } return p.T - 1u; }
fn tanh_safe(x: f32) -> f32 { let e = exp(-2.0 * abs(x)); return sign(x) * (1.0 - e) / (1.0 + e); }
fn kv_offset(b: u32, j: u32, h: u32) -> u32 { return (b * p.T + j) * p.KV * p.D + (h / (p.H / p.KV)) * p.D; }
fn q_offset(b: u32, t: u32, h: u32) -> u32 { return ((b * p.T + t) * p.H + h) * p.D; }
`;

const FORWARD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> K: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read_write> P: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg) * 64u + tid;          // (b · H + h) · T + t
  if (r >= p.B * p.H * p.T) { return; }
  let t = r % p.T;
  let h = (r / p.T) % p.H;
  let b = r / (p.T * p.H);
  let qo = q_offset(b, t, h);
  let po = r * p.T;
  let f = first_key(t);
  let l = last_key(t);
  for (var j = 0u; j < p.T; j++) { P[po + j] = 0.0; }
  var mx = -3.0e38;
  for (var j = f; j <= l; j++) {
    let ko = kv_offset(b, j, h);
    var dot = 0.0;
    for (var i = 0u; i < p.D; i++) { dot += Q[qo + i] * K[ko + i]; }
    dot *= p.scale;
    if (p.softcap > 0.0) { dot = p.softcap * tanh_safe(dot / p.softcap); }
    P[po + j] = dot;
    mx = max(mx, dot);
  }
  var sum = 0.0;
  for (var j = f; j <= l; j++) { let e = exp(P[po + j] - mx); P[po + j] = e; sum += e; }
  for (var j = f; j <= l; j++) { P[po + j] = P[po + j] / sum; }
  for (var i = 0u; i < p.D; i++) {
    var acc = 0.0;
    for (var j = f; j <= l; j++) { acc += P[po + j] * V[kv_offset(b, j, h) + i]; }
    Y[qo + i] = acc;
  }
}
`;

/** dS of each query row (zeros outside its keys). */
const SCORE_GRAD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> K: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<storage, read> dY: array<f32>;
@group(0) @binding(5) var<storage, read> P: array<f32>;
@group(0) @binding(6) var<storage, read_write> S: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg) * 64u + tid;
  if (r >= p.B * p.H * p.T) { return; }
  let t = r % p.T;
  let h = (r / p.T) % p.H;
  let b = r / (p.T * p.H);
  let qo = q_offset(b, t, h);
  let po = r * p.T;
  let f = first_key(t);
  let l = last_key(t);
  for (var j = 0u; j < p.T; j++) { S[po + j] = 0.0; }
  var sum = 0.0;
  for (var j = f; j <= l; j++) {          // ∂P_j = ∂y · v_j
    let vo = kv_offset(b, j, h);
    var dot = 0.0;
    for (var i = 0u; i < p.D; i++) { dot += dY[qo + i] * V[vo + i]; }
    S[po + j] = dot;
    sum += P[po + j] * dot;
  }
  for (var j = f; j <= l; j++) {
    var ds = P[po + j] * (S[po + j] - sum);
    if (p.softcap > 0.0) {
      let ko = kv_offset(b, j, h);
      var raw = 0.0;
      for (var i = 0u; i < p.D; i++) { raw += Q[qo + i] * K[ko + i]; }
      let th = tanh_safe(raw * p.scale / p.softcap);
      ds *= 1.0 - th * th;
    }
    S[po + j] = ds * p.scale;
  }
}
`;

/** ∂q += dS K, one thread per value of q. */
const QUERY_GRAD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> S: array<f32>;
@group(0) @binding(3) var<storage, read_write> dQ: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let idx = group_index(wid, nwg) * 64u + tid;       // ((b · T + t) · H + h) · D + i
  if (idx >= p.B * p.T * p.H * p.D) { return; }
  let i = idx % p.D;
  let h = (idx / p.D) % p.H;
  let bt = idx / (p.D * p.H);
  let t = bt % p.T;
  let b = bt / p.T;
  let so = ((b * p.H + h) * p.T + t) * p.T;
  var acc = 0.0;
  for (var j = first_key(t); j <= last_key(t); j++) { acc += S[so + j] * K[kv_offset(b, j, h) + i]; }
  dQ[idx] = dQ[idx] + acc;
}
`;

/** ∂k += dSᵀ q and ∂v += Pᵀ ∂y, one thread per value of k (and v), over the group's heads. */
const KEY_VALUE_GRAD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> dY: array<f32>;
@group(0) @binding(3) var<storage, read> P: array<f32>;
@group(0) @binding(4) var<storage, read> S: array<f32>;
@group(0) @binding(5) var<storage, read_write> dK: array<f32>;
@group(0) @binding(6) var<storage, read_write> dV: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let idx = group_index(wid, nwg) * 64u + tid;       // ((b · T + j) · KV + kvh) · D + i
  if (idx >= p.B * p.T * p.KV * p.D) { return; }
  let i = idx % p.D;
  let kvh = (idx / p.D) % p.KV;
  let bj = idx / (p.D * p.KV);
  let j = bj % p.T;
  let b = bj / p.T;
  let group = p.H / p.KV;
  var dk = 0.0;
  var dv = 0.0;
  for (var h = kvh * group; h < (kvh + 1u) * group; h++) {
    for (var t = 0u; t < p.T; t++) {
      if (j < first_key(t) || j > last_key(t)) { continue; }
      let so = ((b * p.H + h) * p.T + t) * p.T + j;
      let qo = q_offset(b, t, h) + i;
      dk += S[so] * Q[qo];
      dv += P[so] * dY[qo];
    }
  }
  dK[idx] = dK[idx] + dk;
  dV[idx] = dV[idx] + dv;
}
`;

export interface AttentionDims { batch: number; seq: number; heads: number; kvHeads: number; headDim: number }
export interface AttentionFlags { scale: number; softcap: number; window: number; causal: boolean }

function params(s: AttentionDims, o: AttentionFlags) {
  return { u: [s.batch, s.seq, s.heads, s.kvHeads, s.headDim, o.window, o.causal ? 1 : 0], f: [o.scale, o.softcap] };
}

/** Record out [B·T, H·D] and probs [B, H, T, T]. */
export function attentionForward(rec: Recorder, q: GPUBuffer, k: GPUBuffer, v: GPUBuffer, s: AttentionDims, o: AttentionFlags, out: GPUBuffer, probs: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("train.attention", () => GRID_WGSL + COMMON + FORWARD);
  rec.dispatch(pipeline, [q, k, v, out, probs], params(s, o), Math.ceil((s.batch * s.heads * s.seq) / 64), "train.attention");
}

/** Record dq, dk, dv += attention's gradients at ∂out = dy (`scores`: a [B, H, T, T] buffer it may overwrite). */
export function attentionBackward(rec: Recorder, dy: GPUBuffer, q: GPUBuffer, k: GPUBuffer, v: GPUBuffer, probs: GPUBuffer,
  s: AttentionDims, o: AttentionFlags, scores: GPUBuffer, dq: GPUBuffer, dk: GPUBuffer, dv: GPUBuffer): void {
  const u = params(s, o);
  const rows = s.batch * s.heads * s.seq;
  rec.dispatch(rec.rt.pipeline("train.attentionScoreGrad", () => GRID_WGSL + COMMON + SCORE_GRAD),
    [q, k, v, dy, probs, scores], u, Math.ceil(rows / 64), "train.attentionScoreGrad");
  rec.dispatch(rec.rt.pipeline("train.attentionQueryGrad", () => GRID_WGSL + COMMON + QUERY_GRAD),
    [k, scores, dq], u, Math.ceil((rows * s.headDim) / 64), "train.attentionQueryGrad");
  rec.dispatch(rec.rt.pipeline("train.attentionKeyValueGrad", () => GRID_WGSL + COMMON + KEY_VALUE_GRAD),
    [q, dy, probs, scores, dk, dv], u, Math.ceil((s.batch * s.seq * s.kvHeads * s.headDim) / 64), "train.attentionKeyValueGrad");
}
