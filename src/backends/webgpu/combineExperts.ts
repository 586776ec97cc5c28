// A mixture of experts' output: y[t] = Σ_s w[t, s] · out[t · used + s] over token t's `used`
// experts (./topExperts.ts ids and weights; out from ./expertMatmul.ts). One thread per value,
// the slots summed in their order, so a row's value never depends on the other rows.

import { GRID_WGSL, type Recorder } from "./runtime.js";

const COMBINE_EXPERTS = /* wgsl */ `
struct Params { T: u32, used: u32, d: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> O: array<f32>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.T * p.d) { return; }
  let t = i / p.d;
  let j = i % p.d;
  var y = 0.0;
  for (var s = 0u; s < p.used; s++) {
    let route = t * p.used + s;
    y += weights[route] * O[route * p.d + j];
  }
  Y[i] = y;
}
`;

/** Record y [T, d] from out [T · used, d] and weights [T, used]. */
export function combineExperts(rec: Recorder, out: GPUBuffer, weights: GPUBuffer, T: number, used: number, d: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("combineExperts", () => GRID_WGSL + COMBINE_EXPERTS);
  rec.dispatch(pipeline, [out, weights, y], { u: [T, used, d] }, Math.ceil((T * d) / 64), "combineExperts");
}
