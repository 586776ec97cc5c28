// y = x Wᵀ (+ b): x [T, K] float32, W [rows, K] in its storage type → y [T, rows].
// One workgroup of 64 threads per (weight row, tile of 4 tokens): each thread takes columns
// tid, tid + 64, ... (reading each weight once for the 4 tokens), then the 64 partial sums are
// added in a fixed tree order, so every run gives the same bits (no atomics).
// A weight larger than one storage binding is split by rows (./weights.ts): one dispatch per
// part, each writing its columns of y.

import { GRID_WGSL, type Recorder } from "./runtime.js";
import { weightReader } from "./quant.js";
import type { GpuMatrix } from "./weights.js";

const TILE = 4;

const MATMUL = /* wgsl */ `
struct Params { T: u32, K: u32, rows: u32, out_cols: u32, row0: u32, row_bytes: u32, has_bias: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> W: array<u32>;
@group(0) @binding(3) var<storage, read> B: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;
var<workgroup> partial: array<vec4<f32>, WG>;

/** x[t, c] for the 4 tokens t0.. of the tile (0 past the last token). */
fn x4(t0: u32, c: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  if (t0 < p.T) { v.x = X[t0 * p.K + c]; }
  if (t0 + 1u < p.T) { v.y = X[(t0 + 1u) * p.K + c]; }
  if (t0 + 2u < p.T) { v.z = X[(t0 + 2u) * p.K + c]; }
  if (t0 + 3u < p.T) { v.w = X[(t0 + 3u) * p.K + c]; }
  return v;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let g = group_index(wid, nwg);
  let r = g % p.rows;                 // row of this part of W
  let t0 = (g / p.rows) * 4u;         // first token of the tile
  if (t0 >= p.T) { return; }
  let row_byte = r * p.row_bytes;
  var acc = vec4<f32>(0.0);           // the tile's 4 tokens
  for (var c = tid; c < p.K; c += WG) { acc += weight_at(row_byte, c) * x4(t0, c); }
  partial[tid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  if (tid == 0u) {
    let col = p.row0 + r;
    var bias = 0.0;
    if (p.has_bias == 1u) { bias = B[col]; }
    let sum = partial[0] + vec4<f32>(bias);
    for (var i = 0u; i < 4u; i++) {
      if (t0 + i < p.T) { Y[(t0 + i) * p.out_cols + col] = sum[i]; }
    }
  }
}
`;

/** Record y [T, w.rows] = x [T, w.cols] Wᵀ + bias into `y`. */
export function matmul(rec: Recorder, x: GPUBuffer, w: GpuMatrix, T: number, bias: GPUBuffer | null, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline(`matmul.${w.type}`, () => GRID_WGSL + weightReader(w.type) + MATMUL);
  const b = bias ?? rec.rt.unused; // has_bias = 0: never read
  for (const part of w.parts) {
    rec.dispatch(pipeline, [x, part.buffer, b, y],
      { u: [T, w.cols, part.rows, w.rows, part.row0, w.rowBytes, bias ? 1 : 0] },
      part.rows * Math.ceil(T / TILE), `matmul ${w.name}`);
  }
}
