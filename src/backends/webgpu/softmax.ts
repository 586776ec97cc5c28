// Softmax over each row of x [rows, n], into y: one workgroup per row; max and sum in a fixed
// tree order.

import { GRID_WGSL, type Recorder } from "./runtime.js";

const SOFTMAX = /* wgsl */ `
struct Params { rows: u32, n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.n;
  var m = -3.0e38;
  for (var i = tid; i < p.n; i += 64u) { m = max(m, X[o + i]); }
  partial[tid] = m;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] = max(partial[tid], partial[tid + s]); }
    workgroupBarrier();
  }
  let row_max = partial[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var i = tid; i < p.n; i += 64u) { sum += exp(X[o + i] - row_max); }
  partial[tid] = sum;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  let total = partial[0];
  for (var i = tid; i < p.n; i += 64u) { Y[o + i] = exp(X[o + i] - row_max) / total; }
}
`;

export function softmax(rec: Recorder, x: GPUBuffer, rows: number, n: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("softmax", () => GRID_WGSL + SOFTMAX);
  rec.dispatch(pipeline, [x, y], { u: [rows, n] }, rows, "softmax");
}
