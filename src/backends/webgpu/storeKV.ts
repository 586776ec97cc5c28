// Writing keys and values into an f16 KV cache: two float32 values become one u32 word of two
// halves (pack2x16float, which needs no shader-f16 feature); one dispatch writes both, the keys'
// words first. An f32 cache is written by plain buffer copies (blocks/gpuKVCache.ts).

import { GRID_WGSL, type Recorder } from "./runtime.js";

/** How the GPU KV cache stores keys and values. */
export type GpuKVType = "f32" | "f16";
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
