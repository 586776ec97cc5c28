// Greedy decoding on the GPU: the index of each row's largest value (the lowest index among
// equals, as the host sampler), so that only one integer per row is read back.

import { GRID_WGSL, type Recorder } from "./runtime.js";

const ARGMAX = /* wgsl */ `
struct Params { rows: u32, n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;
var<workgroup> best_value: array<f32, 64>;
var<workgroup> best_index: array<u32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg);
  if (r >= p.rows) { return; }
  var v = -3.4e38;
  var at = 0xffffffffu;
  for (var i = tid; i < p.n; i += 64u) {
    let x = X[r * p.n + i];
    if (x > v || at == 0xffffffffu) { v = x; at = i; }   // strictly greater: keeps the first
  }
  best_value[tid] = v;
  best_index[tid] = at;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) {
      let ov = best_value[tid + s];
      let oi = best_index[tid + s];
      let mine = best_value[tid];
      if (oi != 0xffffffffu && (ov > mine || (ov == mine && oi < best_index[tid]) || best_index[tid] == 0xffffffffu)) {
        best_value[tid] = ov;
        best_index[tid] = oi;
      }
    }
    workgroupBarrier();
  }
  if (tid == 0u) { Y[r] = best_index[0]; }
}
`;

/** y[r] = argmax of row r of x [rows, n] (a u32 buffer of rows values). */
export function argmax(rec: Recorder, x: GPUBuffer, rows: number, n: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("argmax", () => GRID_WGSL + ARGMAX);
  rec.dispatch(pipeline, [x, y], { u: [rows, n] }, rows, "argmax");
}
