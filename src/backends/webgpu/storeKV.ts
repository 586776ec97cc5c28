// Writing keys and values into the GPU KV cache, both in one dispatch (the keys first):
//   f16:  two float32 values become one u32 word of two halves (pack2x16float, which needs no
//         shader-f16 feature);
//   q8_0: per block of 32 values, as ggml's encoder: d = amax / 127, q = round(x / d) half away
//         from zero, d rounded to f16. The GPU keeps the blocks' 32 int8 values as 8 words and
//         their d in a float array of their own, so that no two threads write one word (GGUF's
//         34-byte blocks straddle words).
// An f32 cache is written by plain buffer copies (blocks/gpuKVCache.ts).

import { GRID_WGSL, type Recorder } from "./runtime.js";

/** How the GPU KV cache stores keys and values. */
export type GpuKVType = "f32" | "f16" | "q8_0";
const STORE_F16 = /* wgsl */ `
struct Params { words: u32, src0: u32, dst0: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> V: array<f32>;
@group(0) @binding(3) var<storage, read_write> KC: array<u32>;
@group(0) @binding(4) var<storage, read_write> VC: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i < p.words) {
    KC[p.dst0 + i] = pack2x16float(vec2<f32>(K[p.src0 + 2u * i], K[p.src0 + 2u * i + 1u]));
  } else if (i < 2u * p.words) {
    let j = i - p.words;
    VC[p.dst0 + j] = pack2x16float(vec2<f32>(V[p.src0 + 2u * j], V[p.src0 + 2u * j + 1u]));
  }
}
`;

/** Record: n values of k and of v from value src0 on, as halves into the caches from value dst0 on (both even). */
export function storeF16(rec: Recorder, k: GPUBuffer, v: GPUBuffer, src0: number, n: number, keys: GPUBuffer, values: GPUBuffer, dst0: number): void {
  const pipeline = rec.rt.pipeline("storeKV.f16", () => GRID_WGSL + STORE_F16);
  rec.dispatch(pipeline, [k, v, keys, values], { u: [n / 2, src0, dst0 / 2] }, Math.ceil(n / 64), "storeKV f16");
}

/** One block of 32 values of X from value s0 on, into the words of C and the scale in S. */
const quantizeBlock = (X: string, C: string, S: string) => /* wgsl */ `
    let s0 = p.src0 + 32u * b;
    var amax = 0.0;
    for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(${X}[s0 + j])); }
    let d = amax / 127.0;
    var id = 0.0;
    if (d != 0.0) { id = 1.0 / d; }
    ${S}[p.dst0 / 32u + b] = unpack2x16float(pack2x16float(vec2<f32>(d, 0.0))).x;
    for (var w = 0u; w < 8u; w++) {
      var word = 0u;
      for (var k = 0u; k < 4u; k++) {
        let q = i32(round_away(${X}[s0 + 4u * w + k] * id));
        word |= (bitcast<u32>(q) & 0xffu) << (8u * k);
      }
      ${C}[p.dst0 / 4u + 8u * b + w] = word;
    }`;

const STORE_Q8_0 = /* wgsl */ `
struct Params { blocks: u32, src0: u32, dst0: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> V: array<f32>;
@group(0) @binding(3) var<storage, read_write> KC: array<u32>;
@group(0) @binding(4) var<storage, read_write> VC: array<u32>;
@group(0) @binding(5) var<storage, read_write> KS: array<f32>;
@group(0) @binding(6) var<storage, read_write> VS: array<f32>;

/** roundf: half away from zero (WGSL's round() goes to even). */
fn round_away(x: f32) -> f32 {
  let a = abs(x);
  var r = trunc(a);
  if (a - r >= 0.5) { r += 1.0; }
  return sign(x) * r;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i < p.blocks) {
    let b = i;${quantizeBlock("K", "KC", "KS")}
  } else if (i < 2u * p.blocks) {
    let b = i - p.blocks;${quantizeBlock("V", "VC", "VS")}
  }
}
`;

/** The q8_0 cache of one layer: int8 values (4 per word) and one scale per 32 values, for K and V. */
export interface Q8Buffers {
  keys: GPUBuffer;
  values: GPUBuffer;
  keyScales: GPUBuffer;
  valueScales: GPUBuffer;
}

/** Record: n values of k and of v from value src0 on, as q8_0 blocks from value dst0 on (n and dst0 multiples of 32). */
export function storeQ8_0(rec: Recorder, k: GPUBuffer, v: GPUBuffer, src0: number, n: number, c: Q8Buffers, dst0: number): void {
  const pipeline = rec.rt.pipeline("storeKV.q8_0", () => GRID_WGSL + STORE_Q8_0);
  const blocks = n / 32;
  rec.dispatch(pipeline, [k, v, c.keys, c.values, c.keyScales, c.valueScales], { u: [blocks, src0, dst0] }, Math.ceil((2 * blocks) / 64), "storeKV q8_0");
}
