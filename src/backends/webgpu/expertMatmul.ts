// A mixture of experts' products, as llama.cpp's mul_mat_id: each routed row r of x [R, K]
// times the block of its own expert e = ids[r] of a stacked weight W [E · rows, K] (rows
// [e · rows, (e + 1) · rows), in W's storage type, read through ./quant.ts weight_at):
//   y[r, o] = Σ_c x[r, c] · W[ids[r] · rows + o, c]      → y [R, rows]
// Only the chosen experts' rows are read. One workgroup of 64 threads per (routed row, output
// row): each thread takes columns tid, tid + 64, ..., then the 64 partial sums are added in a
// fixed tree order (as ./matmul.ts), so every run gives the same bits and a row's result never
// depends on the other rows of the batch. A weight split into parts (./weights.ts) takes one
// dispatch per part; each workgroup writes only if its expert's row lies in that part.

import { GRID_WGSL, type Recorder } from "./runtime.js";
import { weightReader } from "./quant.js";
import type { GpuMatrix } from "./weights.js";

const EXPERT_MATMUL = /* wgsl */ `
struct Params { R: u32, K: u32, rows: u32, row_bytes: u32, row0: u32, part_rows: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read> W: array<u32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;
var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let g = group_index(wid, nwg);
  if (g >= p.R * p.rows) { return; }
  let r = g / p.rows;                          // routed row
  let o = g % p.rows;                          // row of its expert's block
  let w_row = ids[r] * p.rows + o;             // row of the stacked weight
  // The expert id comes from memory, so the branch is not uniform: no return before the barriers.
  let here = w_row >= p.row0 && w_row < p.row0 + p.part_rows;
  var acc = 0.0;
  if (here) {
    let row_byte = (w_row - p.row0) * p.row_bytes;
    for (var c = tid; c < p.K; c += WG) { acc += weight_at(row_byte, c) * X[r * p.K + c]; }
  }
  partial[tid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  if (here && tid == 0u) { Y[r * p.rows + o] = partial[0]; }
}
`;

/** Record y [R, rows] = each row of x [R, w.cols] times its expert's block (ids: R u32 values) of w. */
export function expertMatmul(rec: Recorder, x: GPUBuffer, ids: GPUBuffer, w: GpuMatrix, R: number, rows: number, y: GPUBuffer): void {
  if (w.rows % rows !== 0) throw new RangeError(`expertMatmul: ${w.name} has ${w.rows} rows, not a whole number of experts of ${rows}`);
  const pipeline = rec.rt.pipeline(`expertMatmul.${w.type}`, () => GRID_WGSL + weightReader(w.type) + EXPERT_MATMUL);
  for (const part of w.parts) {
    rec.dispatch(pipeline, [x, ids, part.buffer, y], { u: [R, w.cols, rows, w.rowBytes, part.row0, part.rows] }, R * rows, `expertMatmul ${w.name}`);
  }
}
