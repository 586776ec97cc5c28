// y[t, :] = W[ids[t], :] dequantized (embedding lookup): one thread per output value.

import { GRID_WGSL, type Recorder } from "./runtime.js";
import { weightReader } from "./quant.js";
import type { GpuMatrix } from "./weights.js";

const GET_ROWS = /* wgsl */ `
struct Params { T: u32, K: u32, row0: u32, rows: u32, row_bytes: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read> W: array<u32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.T * p.K) { return; }
  let id = u32(ids[i / p.K]);
  if (id < p.row0 || id >= p.row0 + p.rows) { return; }   // in another part of W
  Y[i] = weight_at((id - p.row0) * p.row_bytes, i % p.K);
}
`;

/** Record y [T, w.cols] = rows `ids` (an i32 buffer of T ids, checked by the caller) of w. */
export function getRows(rec: Recorder, w: GpuMatrix, ids: GPUBuffer, T: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline(`getRows.${w.type}`, () => GRID_WGSL + weightReader(w.type) + GET_ROWS);
  for (const part of w.parts) {
    rec.dispatch(pipeline, [ids, part.buffer, y], { u: [T, w.cols, part.row0, part.rows, w.rowBytes] },
      Math.ceil((T * w.cols) / 64), `getRows ${w.name}`);
  }
}
