// Causal (optionally windowed, soft-capped) attention of a sequence's T new queries over its
// cached keys and values, grouped-query: head h reads KV head h / (heads / kvHeads).
//   scores:  S[t, h, j] = scale · q[t, h]·k[j]   (cap · tanh(S / cap) when soft-capped)
//   values:  out[t, h] = Σ_j softmax_j(S[t, h]) · v[j]
// Key j sits at position j (the GPU cache keeps every position, ./kvCache.ts); query t at
// pos0 + t sees keys first..last: last = its own position (causal), first = pos − window + 1.
// Four kernels, each with a fixed order of sums (the same bits on every run): `scores` (one
// thread per (t, h, j)), `weights` (the softmax of each row, one workgroup per (t, h)), `values`
// (one workgroup per (t, h, chunk of keys)) and `combine` (the chunks' sums, in order). Chunk
// boundaries are fixed positions, so each row's sums are the same whatever the rows around it.

import type { AttentionOptions } from "../kernels.js";
import { GRID_WGSL, type Recorder } from "./runtime.js";
import type { GpuKVType } from "./storeKV.js";

/** Reading cached value i of K (or V) stored as f32 or as f16 pairs packed in u32 words. */
function cacheReader(name: string, type: GpuKVType): string {
  return type === "f32"
    ? `@group(0) @binding(2) var<storage, read> ${name}: array<f32>;\nfn ${name}_at(i: u32) -> f32 { return ${name}[i]; }\n`
    : `@group(0) @binding(2) var<storage, read> ${name}: array<u32>;\nfn ${name}_at(i: u32) -> f32 { return unpack2x16float(${name}[i >> 1u])[i & 1u]; }\n`;
}

const PARAMS = /* wgsl */ `
struct Params { T: u32, heads: u32, kv_heads: u32, head_dim: u32, n_keys: u32, pos0: u32, row0: u32,
                causal: u32, window: u32, chunks: u32, chunk_len: u32, scale: f32, softcap: f32 }
@group(0) @binding(0) var<uniform> p: Params;

/** The keys query t sees: [first, last]. */
fn key_range(t: u32) -> vec2<u32> {
  let pos = p.pos0 + t;
  let last = select(p.n_keys - 1u, min(pos, p.n_keys - 1u), p.causal == 1u);
  let first = select(0u, max(pos + 1u, p.window) - p.window, p.window > 0u);
  return vec2<u32>(first, last);
}
`;

const SCORES = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(3) var<storage, read_write> S: array<f32>;

fn soft_cap(x: f32, cap: f32) -> f32 {
  let e = exp(-2.0 * abs(x / cap));           // tanh without overflow
  return cap * sign(x) * (1.0 - e) / (1.0 + e);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let k = group_index(wid, nwg) * 64u + tid;
  if (k >= p.T * p.heads * p.n_keys) { return; }
  let j = k % p.n_keys;
  let th = k / p.n_keys;                       // t · heads + h
  let t = th / p.heads;
  let h = th % p.heads;
  let range = key_range(t);
  if (j < range.x || j > range.y) { return; }
  let qo = ((p.row0 + t) * p.heads + h) * p.head_dim;
  let ko = (j * p.kv_heads + h / (p.heads / p.kv_heads)) * p.head_dim;
  var s = 0.0;
  for (var d = 0u; d < p.head_dim; d++) { s += Q[qo + d] * K_at(ko + d); }
  s *= p.scale;
  if (p.softcap > 0.0) { s = soft_cap(s, p.softcap); }
  S[th * p.n_keys + j] = s;
}
`;

/** Softmax of each (t, h) row of scores over its key range, in place: one workgroup per row,
 *  the max and the sum in a fixed tree order. */
const WEIGHTS = /* wgsl */ `
@group(0) @binding(1) var<storage, read_write> S: array<f32>;

var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let th = group_index(wid, nwg);              // t · heads + h
  if (th >= p.T * p.heads) { return; }
  let range = key_range(th / p.heads);
  let row = th * p.n_keys;
  var m = -3.0e38;
  for (var j = range.x + tid; j <= range.y; j += 64u) { m = max(m, S[row + j]); }
  partial[tid] = m;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] = max(partial[tid], partial[tid + s]); }
    workgroupBarrier();
  }
  let row_max = partial[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var j = range.x + tid; j <= range.y; j += 64u) {
    let e = exp(S[row + j] - row_max);
    S[row + j] = e;
    sum += e;
  }
  partial[tid] = sum;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  let total = partial[0];
  for (var j = range.x + tid; j <= range.y; j += 64u) { S[row + j] = S[row + j] / total; }
}
`;

/** Each (t, h, chunk of keys): Σ_j P[j] · v[j] over the chunk's keys in the row's range, one
 *  thread per output dim. Chunks split a long cache over workgroups, so one query (decode)
 *  still fills the GPU. */
const VALUES = /* wgsl */ `
@group(0) @binding(1) var<storage, read> S: array<f32>;
@group(0) @binding(3) var<storage, read_write> Part: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let g = group_index(wid, nwg);               // (t · heads + h) · chunks + c
  if (g >= p.T * p.heads * p.chunks) { return; }
  let th = g / p.chunks;
  let c = g % p.chunks;
  let h = th % p.heads;
  let range = key_range(th / p.heads);
  let first = max(range.x, c * p.chunk_len);
  let last = min(range.y + 1u, (c + 1u) * p.chunk_len);   // one past
  let row = th * p.n_keys;
  let vo = (h / (p.heads / p.kv_heads)) * p.head_dim;
  let stride = p.kv_heads * p.head_dim;
  for (var d = tid; d < p.head_dim; d += 64u) {
    var acc = 0.0;
    for (var j = first; j < last; j++) { acc += S[row + j] * V_at(j * stride + vo + d); }
    Part[g * p.head_dim + d] = acc;
  }
}
`;

/** out[t, h, d] = Σ_c Part[t, h, c, d], the chunks added in order: one thread per output. */
const COMBINE = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Part: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;   // (t · heads + h) · head_dim + d
  if (i >= p.T * p.heads * p.head_dim) { return; }
  let th = i / p.head_dim;
  let d = i % p.head_dim;
  var acc = 0.0;
  for (var c = 0u; c < p.chunks; c++) { acc += Part[(th * p.chunks + c) * p.head_dim + d]; }
  let t = th / p.heads;
  Y[((p.row0 + t) * p.heads + th % p.heads) * p.head_dim + d] = acc;
}
`;

/** Keys per chunk of the values pass. Fixed, so that a row's sums never depend on how many
 *  other queries share its forward (a prompt read in one piece or in several gives the same
 *  bits); 256 keys still split a 4096-token cache over 16 workgroups per head. */
const CHUNK_KEYS = 256;

export interface AttentionShape {
  /** Queries of this sequence, and where its rows start in q and out. */
  T: number;
  row0: number;
  /** Position of its first query; keys 0..nKeys−1 are cached. */
  pos0: number;
  nKeys: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

/** Record out[row0 .. row0+T) = attention of q's rows over keys/values stored as `type`. */
export function attention(rec: Recorder, q: GPUBuffer, keys: GPUBuffer, values: GPUBuffer, type: GpuKVType, s: AttentionShape, opts: AttentionOptions, out: GPUBuffer): void {
  const rows = s.T * s.heads;
  const chunks = Math.ceil(s.nKeys / CHUNK_KEYS), chunkLen = CHUNK_KEYS;
  const scores = rec.buffer(rows * s.nKeys * 4, "attention scores");
  const part = rec.buffer(rows * chunks * s.headDim * 4, "attention partial sums");
  const params = {
    u: [s.T, s.heads, s.kvHeads, s.headDim, s.nKeys, s.pos0, s.row0, opts.causal ? 1 : 0, opts.window, chunks, chunkLen],
    f: [opts.scale, opts.softcap],
  };
  const pipeline = (name: string, body: string) => rec.rt.pipeline(`attention.${name}.${type}`, () => GRID_WGSL + PARAMS + body);
  rec.dispatch(pipeline("scores", cacheReader("K", type) + SCORES), [q, keys, scores], params, Math.ceil((rows * s.nKeys) / 64), "attention scores");
  rec.dispatch(pipeline("weights", WEIGHTS), [scores], params, rows, "attention weights");
  rec.dispatch(pipeline("values", cacheReader("V", type) + VALUES), [scores, values, part], params, rows * chunks, "attention values");
  rec.dispatch(pipeline("combine", COMBINE), [part, out], params, Math.ceil((rows * s.headDim) / 64), "attention combine");
}
