// Each row of x [rows, n] `times` times in a row: y [rows · times, n] (a mixture of experts'
// routed rows, token by token: row t · used + s is token t's input to its s-th expert).

import { GRID_WGSL, type Recorder } from "./runtime.js";

const REPEAT_ROWS = /* wgsl */ `
struct Params { count: u32, n: u32, times: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.count) { return; }
  Y[i] = X[(i / (p.n * p.times)) * p.n + i % p.n];
}
`;

export function repeatRows(rec: Recorder, x: GPUBuffer, rows: number, n: number, times: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("repeatRows", () => GRID_WGSL + REPEAT_ROWS);
  const count = rows * times * n;
  rec.dispatch(pipeline, [x, y], { u: [count, n, times] }, Math.ceil(count / 64), "repeatRows");
}
