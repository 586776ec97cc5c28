// The row-wise ops of training beyond the inference kernels: RMSNorm's backward and the
// cross-entropy's log-sum-exp and gradient. A row's sums run on one workgroup of 64 threads
// (strided partial sums, then a fixed tree); a column's sum over rows is one thread's loop. No
// atomics, so the same bits on every run.

import { GRID_WGSL, type Recorder } from "../runtime.js";

const ROW_REDUCE = /* wgsl */ `
var<workgroup> partial: array<f32, 64>;
fn row_sum(v: f32, tid: u32) -> f32 {
  workgroupBarrier();   // every thread has read the previous result
  partial[tid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  return partial[0];
}
fn row_max(v: f32, tid: u32) -> f32 {
  workgroupBarrier();
  partial[tid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] = max(partial[tid], partial[tid + s]); }
    workgroupBarrier();
  }
  return partial[0];
}
`;

/** Per row: r = 1/√(mean(x²) + ε) into R, and ∂x += r (∂y ⊙ g) − x r³ mean(∂y ⊙ g ⊙ x) if wanted. */
const RMS_NORM_BACKWARD = /* wgsl */ `
struct Params { rows: u32, n: u32, want_dx: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> G: array<f32>;
@group(0) @binding(4) var<storage, read_write> dX: array<f32>;
@group(0) @binding(5) var<storage, read_write> R: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.n;
  var ss = 0.0;
  var dot = 0.0;
  for (var i = tid; i < p.n; i += 64u) { ss += X[o + i] * X[o + i]; dot += dY[o + i] * G[i] * X[o + i]; }
  let s = 1.0 / sqrt(row_sum(ss, tid) / f32(p.n) + p.eps);
  let c = s * s * s * row_sum(dot, tid) / f32(p.n);
  if (tid == 0u) { R[r] = s; }
  if (p.want_dx == 1u) {
    for (var i = tid; i < p.n; i += 64u) { dX[o + i] = dX[o + i] + (s * dY[o + i] * G[i] - X[o + i] * c); }
  }
}
`;

/** ∂g[i] += Σ_rows ∂y ⊙ x r, one thread per column. */
const RMS_NORM_WEIGHT_GRAD = /* wgsl */ `
struct Params { rows: u32, n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dY: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> R: array<f32>;
@group(0) @binding(4) var<storage, read_write> dG: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.n) { return; }
  var acc = 0.0;
  for (var r = 0u; r < p.rows; r++) { acc += dY[r * p.n + i] * X[r * p.n + i] * R[r]; }
  dG[i] = dG[i] + acc;
}
`;

/** lse[t] = log Σ exp z_t, one workgroup per row. */
const LOG_SUM_EXP = /* wgsl */ `
struct Params { rows: u32, V: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Z: array<f32>;
@group(0) @binding(2) var<storage, read_write> LSE: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let r = group_index(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.V;
  var mx = -3.0e38;
  for (var i = tid; i < p.V; i += 64u) { mx = max(mx, Z[o + i]); }
  let m = row_max(mx, tid);
  var s = 0.0;
  for (var i = tid; i < p.V; i += 64u) { s += exp(Z[o + i] - m); }
  let total = row_sum(s, tid);
  if (tid == 0u) { LSE[r] = m + log(total); }
}
`;

/** ∂z_t += g (softmax(z_t) − onehot(target_t)) for rows whose target is not ignored. */
const CROSS_ENTROPY_BACKWARD = /* wgsl */ `
struct Params { rows: u32, V: u32, ignore: u32, g: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Z: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> LSE: array<f32>;
@group(0) @binding(4) var<storage, read_write> dZ: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let idx = group_index(wid, nwg) * 64u + tid;
  if (idx >= p.rows * p.V) { return; }
  let t = idx / p.V;
  let tgt = targets[t];
  if (bitcast<u32>(tgt) == p.ignore) { return; }
  var d = dZ[idx] + p.g * exp(Z[idx] - LSE[t]);
  if (u32(tgt) == idx % p.V) { d -= p.g; }
  dZ[idx] = d;
}
`;

/** Record dx += (if dx) and dg += (if dg) RMSNorm's gradients; `inv` holds `rows` floats of scratch. */
export function rmsNormBackward(rec: Recorder, dy: GPUBuffer, x: GPUBuffer, g: GPUBuffer, rows: number, n: number, eps: number,
  dx: GPUBuffer | null, dg: GPUBuffer | null, inv: GPUBuffer): void {
  rec.dispatch(rec.rt.pipeline("train.rmsNormBackward", () => GRID_WGSL + ROW_REDUCE + RMS_NORM_BACKWARD),
    [dy, x, g, dx ?? rec.rt.unused, inv], { u: [rows, n, dx ? 1 : 0], f: [eps] }, rows, "train.rmsNormBackward");
  if (dg) {
    rec.dispatch(rec.rt.pipeline("train.rmsNormWeightGrad", () => GRID_WGSL + RMS_NORM_WEIGHT_GRAD),
      [dy, x, inv, dg], { u: [rows, n] }, Math.ceil(n / 64), "train.rmsNormWeightGrad");
  }
}

/** Record lse [rows] of logits [rows, V]. */
export function logSumExp(rec: Recorder, logits: GPUBuffer, rows: number, V: number, lse: GPUBuffer): void {
  rec.dispatch(rec.rt.pipeline("train.logSumExp", () => GRID_WGSL + ROW_REDUCE + LOG_SUM_EXP),
    [logits, lse], { u: [rows, V] }, rows, "train.logSumExp");
}

/** Record dz += g (softmax − onehot) over rows whose target (int32) is not `ignore`. */
export function crossEntropyBackward(rec: Recorder, logits: GPUBuffer, targets: GPUBuffer, lse: GPUBuffer, rows: number, V: number,
  ignore: number, g: number, dz: GPUBuffer): void {
  rec.dispatch(rec.rt.pipeline("train.crossEntropyBackward", () => GRID_WGSL + CROSS_ENTROPY_BACKWARD),
    [logits, targets, lse, dz], { u: [rows, V, ignore >>> 0], f: [g] }, Math.ceil((rows * V) / 64), "train.crossEntropyBackward");
}
