// RMSNorm and LayerNorm over rows: one workgroup of 64 threads per row; the sums are taken in
// a fixed order (strided per thread, then a tree), so the same bits on every run.

import { GRID_WGSL, type Recorder } from "./runtime.js";

/** Workgroup sum of each thread's `v` (a tree over 64 partial sums). */
const ROW_SUM = /* wgsl */ `
var<workgroup> partial: array<f32, 64>;
fn row_sum(v: f32, tid: u32) -> f32 {
  workgroupBarrier();   // every thread has read the previous sum
  partial[tid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  return partial[0];
}
`;

const RMS_NORM = /* wgsl */ `
struct Params { rows: u32, n: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.n;
  var ss = 0.0;
  for (var i = tid; i < p.n; i += 64u) { ss += X[o + i] * X[o + i]; }
  let scale = 1.0 / sqrt(row_sum(ss, tid) / f32(p.n) + p.eps);
  for (var i = tid; i < p.n; i += 64u) { Y[o + i] = X[o + i] * scale * weight[i]; }
}
`;

const LAYER_NORM = /* wgsl */ `
struct Params { rows: u32, n: u32, has_bias: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.n;
  var s = 0.0;
  for (var i = tid; i < p.n; i += 64u) { s += X[o + i]; }
  let mean = row_sum(s, tid) / f32(p.n);
  var vs = 0.0;
  for (var i = tid; i < p.n; i += 64u) { let d = X[o + i] - mean; vs += d * d; }
  let scale = 1.0 / sqrt(row_sum(vs, tid) / f32(p.n) + p.eps);
  for (var i = tid; i < p.n; i += 64u) {
    Y[o + i] = (X[o + i] - mean) * scale * weight[i] + select(0.0, bias[i], p.has_bias == 1u);
  }
}
`;

export function rmsNorm(rec: Recorder, x: GPUBuffer, weight: GPUBuffer, rows: number, n: number, eps: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("rmsNorm", () => GRID_WGSL + ROW_SUM + RMS_NORM);
  rec.dispatch(pipeline, [x, weight, y], { u: [rows, n], f: [eps] }, rows, "rmsNorm");
}

export function layerNorm(rec: Recorder, x: GPUBuffer, weight: GPUBuffer, bias: GPUBuffer | null, rows: number, n: number, eps: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("layerNorm", () => GRID_WGSL + ROW_SUM + LAYER_NORM);
  rec.dispatch(pipeline, [x, weight, bias ?? rec.rt.unused, y], { u: [rows, n, bias ? 1 : 0], f: [eps] }, rows, "layerNorm");
}
