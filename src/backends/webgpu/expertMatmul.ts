// A mixture of experts' products, as llama.cpp's mul_mat_id: each routed row r of x [R, K]
// times the block of its own expert e of a stacked weight W [E · rows, K] (rows
// [e · rows, (e + 1) · rows), in W's storage type, read through ./quant.ts weight_at):
//   y[r, o] = Σ_c x[r, c] · W[e · rows + o, c]      → y [R, rows]
// Only the chosen experts' rows are read. The routed rows come grouped by expert in tiles of up
// to 4 (./topExperts.ts), and one workgroup of 64 threads takes a (tile, output row), as
// ./matmul.ts takes (4 tokens, weight row): each thread takes columns tid, tid + 64, ...,
// reading each weight once for the tile's rows, then the 64 partial sums are added in a fixed
// tree order. Each row's sum is its own lane of the same steps, so every run gives the same bits
// and a row's result never depends on the rows it shares a tile with (batch invariance).
// A weight split into parts (./weights.ts) takes one dispatch per part; each workgroup writes
// only if its expert's row lies in that part.

import { GRID_WGSL, type Recorder } from "./runtime.js";
import { weightReader } from "./quant.js";
import type { GpuMatrix } from "./weights.js";

const EXPERT_MATMUL = /* wgsl */ `
struct Params { K: u32, rows: u32, row_bytes: u32, row0: u32, part_rows: u32, max_tiles: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> tiles: array<u32>;
@group(0) @binding(3) var<storage, read> W: array<u32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;
const NO_ROW = 0xffffffffu;
var<workgroup> partial: array<vec4<f32>, WG>;

/** x[r, c] for the tile's 4 rows (0 where the tile has no row). */
fn x4(r: vec4<u32>, c: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  if (r.x != NO_ROW) { v.x = X[r.x * p.K + c]; }
  if (r.y != NO_ROW) { v.y = X[r.y * p.K + c]; }
  if (r.z != NO_ROW) { v.z = X[r.z * p.K + c]; }
  if (r.w != NO_ROW) { v.w = X[r.w * p.K + c]; }
  return v;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let g = group_index(wid, nwg);
  if (g >= p.max_tiles * p.rows) { return; }
  let tile = g / p.rows;
  let o = g % p.rows;                          // row of the expert's block
  // The tiles come from memory, so these branches are not uniform: no return before the barriers.
  let live = tile < tiles[0];
  var e = 0u;
  var r = vec4<u32>(NO_ROW);
  if (live) {
    let at = 1u + 5u * tile;
    e = tiles[at];
    r = vec4<u32>(tiles[at + 1u], tiles[at + 2u], tiles[at + 3u], tiles[at + 4u]);
  }
  let w_row = e * p.rows + o;                  // row of the stacked weight
  let here = live && w_row >= p.row0 && w_row < p.row0 + p.part_rows;
  var acc = vec4<f32>(0.0);
  if (here) {
    let row_byte = (w_row - p.row0) * p.row_bytes;
    for (var c = tid; c < p.K; c += WG) { acc += weight_at(row_byte, c) * x4(r, c); }
  }
  partial[tid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  if (here && tid == 0u) {
    let sum = partial[0];
    for (var i = 0u; i < 4u; i++) {
      if (r[i] != NO_ROW) { Y[r[i] * p.rows + o] = sum[i]; }
    }
  }
}
`;

/** Record y [R, rows] = each row of x [R, w.cols] times its expert's block of w; `tiles` and
 *  `maxTiles` from ./topExperts.ts. */
export function expertMatmul(rec: Recorder, x: GPUBuffer, tiles: GPUBuffer, maxTiles: number, w: GpuMatrix, rows: number, y: GPUBuffer): void {
  if (w.rows % rows !== 0) throw new RangeError(`expertMatmul: ${w.name} has ${w.rows} rows, not a whole number of experts of ${rows}`);
  const pipeline = rec.rt.pipeline(`expertMatmul.${w.type}`, () => GRID_WGSL + weightReader(w.type) + EXPERT_MATMUL);
  for (const part of w.parts) {
    rec.dispatch(pipeline, [x, tiles, part.buffer, y], { u: [w.cols, rows, w.rowBytes, part.row0, part.rows, maxTiles] }, maxTiles * rows, `expertMatmul ${w.name}`);
  }
}
