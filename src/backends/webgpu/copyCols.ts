// Columns [from, from + w) of x [rows, n] into y [rows, w] (the q, k, v of a fused projection).

import { GRID_WGSL, type Recorder } from "./runtime.js";

const COPY_COLS = /* wgsl */ `
struct Params { rows: u32, n: u32, col0: u32, w: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.rows * p.w) { return; }
  Y[i] = X[(i / p.w) * p.n + p.col0 + i % p.w];
}
`;

export function copyCols(rec: Recorder, x: GPUBuffer, rows: number, n: number, from: number, w: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline("copyCols", () => GRID_WGSL + COPY_COLS);
  rec.dispatch(pipeline, [x, y], { u: [rows, n, from, w] }, Math.ceil((rows * w) / 64), "copyCols");
}
