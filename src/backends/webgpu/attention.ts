// Causal (optionally windowed, soft-capped) attention of a sequence's T new queries over its
// cached keys and values, grouped-query: head h reads KV head h / (heads / kvHeads).
//   scores:  S[t, h, j] = scale · q[t, h]·k[j]   (cap · tanh(S / cap) when soft-capped)
//   values:  out[t, h] = Σ_j softmax_j(S[t, h]) · v[j]
// Key j sits at position j (the GPU cache keeps every position, ./kvCache.ts); query t at
// pos0 + t sees keys first..last: last = its own position (causal), first = pos − window + 1.
// Two kernels, each with a fixed order of sums (the same bits on every run). `chunks`: one
// workgroup per (t, h, chunk of 256 keys) computes the chunk's scores, their max m, the sum l of
// exp(S − m) and the values weighted by exp(S − m) (a partial softmax, as flash attention keeps
// one); `combine` merges the chunks in order: out = Σ_c e^(m_c − M) o_c / Σ_c e^(m_c − M) l_c
// with M the largest m_c. Chunk boundaries are fixed positions, so each row's sums are the same
// whatever the rows around it (batch invariance), and a long cache is spread over workgroups.

import type { AttentionOptions } from "../kernels.js";
import { GRID_WGSL, type Recorder } from "./runtime.js";
import type { GpuKVType } from "./storeKV.js";

/** Reading cached value i of K (or V) stored as f32, as f16 pairs packed in u32 words, or as q8_0
 *  (four int8 per word, a scale per 32 values in `scales`: ./storeKV.ts). */
function cacheReader(name: string, type: GpuKVType, binding: number, scales: number): string {
  if (type === "f32") return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<f32>;\nfn ${name}_at(i: u32) -> f32 { return ${name}[i]; }\n`;
  if (type === "f16") return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<u32>;\nfn ${name}_at(i: u32) -> f32 { return unpack2x16float(${name}[i >> 1u])[i & 1u]; }\n`;
  return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<u32>;
@group(0) @binding(${scales}) var<storage, read> ${name}S: array<f32>;
fn ${name}_at(i: u32) -> f32 { return ${name}S[i >> 5u] * f32(bitcast<i32>(${name}[i >> 2u] << (24u - 8u * (i & 3u))) >> 24u); }
`;
}

/** A layer's cached keys and values (q8_0: with their scales). */
export interface CachedKV {
  keys: GPUBuffer;
  values: GPUBuffer;
  keyScales?: GPUBuffer;
  valueScales?: GPUBuffer;
}

/** Keys per chunk. Fixed, so that a row's sums never depend on how many
 *  other queries share its forward (a prompt read in one piece or in several gives the same
 *  bits); 256 keys still split a 4096-token cache over 16 workgroups per head. */
const CHUNK_KEYS = 256;

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

/** One workgroup per (t, h, chunk): the chunk's scores in workgroup memory, then its max, its
 *  sum of exponentials and its weighted values (one thread per output dim), all in fixed order. */
const CHUNKS = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(4) var<storage, read_write> Part: array<f32>;   // [t, h, chunk, head_dim]
@group(0) @binding(5) var<storage, read_write> Stats: array<f32>;  // [t, h, chunk, 2]: m, l

const CHUNK = ${CHUNK_KEYS}u;
var<workgroup> scores: array<f32, CHUNK>;
var<workgroup> query: array<f32, 512>;
var<workgroup> partial: array<f32, 64>;

fn soft_cap(x: f32, cap: f32) -> f32 {
  let e = exp(-2.0 * abs(x / cap));           // tanh without overflow
  return cap * sign(x) * (1.0 - e) / (1.0 + e);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let g = group_index(wid, nwg);               // (t · heads + h) · chunks + c
  if (g >= p.T * p.heads * p.chunks) { return; }
  let th = g / p.chunks;
  let c = g % p.chunks;
  let h = th % p.heads;
  let range = key_range(th / p.heads);
  let first = max(range.x, c * CHUNK);
  let last = min(range.y + 1u, (c + 1u) * CHUNK);   // one past; first >= last: no key here
  let qo = ((p.row0 + th / p.heads) * p.heads + h) * p.head_dim;
  for (var d = tid; d < p.head_dim; d += 64u) { query[d] = Q[qo + d]; }
  workgroupBarrier();
  let kv = h / (p.heads / p.kv_heads);
  let stride = p.kv_heads * p.head_dim;
  var m = -3.0e38;
  for (var j = first + tid; j < last; j += 64u) {
    let ko = j * stride + kv * p.head_dim;
    var s = 0.0;
    for (var d = 0u; d < p.head_dim; d++) { s += query[d] * K_at(ko + d); }
    s *= p.scale;
    if (p.softcap > 0.0) { s = soft_cap(s, p.softcap); }
    scores[j - c * CHUNK] = s;
    m = max(m, s);
  }
  partial[tid] = m;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] = max(partial[tid], partial[tid + s]); }
    workgroupBarrier();
  }
  let chunk_max = partial[0];
  workgroupBarrier();
  var l = 0.0;
  for (var j = first + tid; j < last; j += 64u) {
    let e = exp(scores[j - c * CHUNK] - chunk_max);
    scores[j - c * CHUNK] = e;
    l += e;
  }
  partial[tid] = l;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  let vo = kv * p.head_dim;
  for (var d = tid; d < p.head_dim; d += 64u) {
    var acc = 0.0;
    for (var j = first; j < last; j++) { acc += scores[j - c * CHUNK] * V_at(j * stride + vo + d); }
    Part[g * p.head_dim + d] = acc;
  }
  if (tid == 0u) {
    Stats[2u * g] = chunk_max;
    Stats[2u * g + 1u] = partial[0];
  }
}
`;

/** out[t, h, d]: the chunks' partial softmaxes merged in order, one thread per output. */
const COMBINE = /* wgsl */ `
@group(0) @binding(1) var<storage, read> Part: array<f32>;
@group(0) @binding(2) var<storage, read> Stats: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;   // (t · heads + h) · head_dim + d
  if (i >= p.T * p.heads * p.head_dim) { return; }
  let th = i / p.head_dim;
  let d = i % p.head_dim;
  var top = -3.0e38;
  for (var c = 0u; c < p.chunks; c++) {
    if (Stats[2u * (th * p.chunks + c) + 1u] > 0.0) { top = max(top, Stats[2u * (th * p.chunks + c)]); }
  }
  var num = 0.0;
  var den = 0.0;
  for (var c = 0u; c < p.chunks; c++) {
    let g = th * p.chunks + c;
    let l = Stats[2u * g + 1u];
    if (l > 0.0) {                             // a chunk with keys in the row's range
      let w = exp(Stats[2u * g] - top);
      num += w * Part[g * p.head_dim + d];
      den += w * l;
    }
  }
  let t = th / p.heads;
  Y[((p.row0 + t) * p.heads + th % p.heads) * p.head_dim + d] = num / den;
}
`;



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
export function attention(rec: Recorder, q: GPUBuffer, kv: CachedKV, type: GpuKVType, s: AttentionShape, opts: AttentionOptions, out: GPUBuffer): void {
  if (s.headDim > 512) throw new Error(`webgpu attention: head dim ${s.headDim} is above the kernel's 512`);
  const rows = s.T * s.heads;
  const chunks = Math.ceil(s.nKeys / CHUNK_KEYS);
  const part = rec.buffer(rows * chunks * s.headDim * 4, "attention partial sums");
  const stats = rec.buffer(rows * chunks * 2 * 4, "attention partial max and sum");
  const params = {
    u: [s.T, s.heads, s.kvHeads, s.headDim, s.nKeys, s.pos0, s.row0, opts.causal ? 1 : 0, opts.window, chunks, CHUNK_KEYS],
    f: [opts.scale, opts.softcap],
  };
  const pipeline = (name: string, body: string) => rec.rt.pipeline(`attention.${name}.${type}`, () => GRID_WGSL + PARAMS + body);
  const scales = type === "q8_0" ? [kv.keyScales!, kv.valueScales!] : [];
  rec.dispatch(pipeline("chunks", cacheReader("K", type, 2, 6) + cacheReader("V", type, 3, 7) + CHUNKS), [q, kv.keys, kv.values, part, stats, ...scales],
    params, rows * chunks, "attention chunks");
  rec.dispatch(pipeline("combine", COMBINE), [part, stats, out], params, Math.ceil((rows * s.headDim) / 64), "attention combine");
}
