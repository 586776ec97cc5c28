// C [M, N] (+)= op(A) [M, K] · op(B) [K, N], float32, op = as stored or transposed (by stride,
// no copies): the three products of a linear layer in training, y = x Wᵀ, ∂x += ∂y W and
// ∂W += ∂yᵀ x. One workgroup of 8 × 8 threads per 8 × 8 tile of C; each step stages an 8-wide
// slice of K of both operands in workgroup memory. Every output is one thread's running sum over
// k in order, so the same bits on every run.

import { GRID_WGSL, type Recorder } from "../runtime.js";

const TILE = 8;

const GEMM = /* wgsl */ `
struct Params { M: u32, N: u32, K: u32, lda: u32, ldb: u32, ldc: u32, trans_a: u32, trans_b: u32, accumulate: u32, tiles_n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

const TS = 8u;
var<workgroup> As: array<array<f32, 8>, 8>;   // [row of C][k]
var<workgroup> Bs: array<array<f32, 8>, 8>;   // [k][column of C]

fn a_at(i: u32, k: u32) -> f32 {
  if (i >= p.M || k >= p.K) { return 0.0; }
  if (p.trans_a == 1u) { return A[k * p.lda + i]; }
  return A[i * p.lda + k];
}
fn b_at(k: u32, j: u32) -> f32 {
  if (k >= p.K || j >= p.N) { return 0.0; }
  if (p.trans_b == 1u) { return B[j * p.ldb + k]; }
  return B[k * p.ldb + j];
}

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let g = group_index(wid, nwg);
  let i = (g / p.tiles_n) * TS + lid.y;
  let j = (g % p.tiles_n) * TS + lid.x;
  var acc = 0.0;
  for (var k0 = 0u; k0 < p.K; k0 += TS) {
    As[lid.y][lid.x] = a_at(i, k0 + lid.x);
    Bs[lid.y][lid.x] = b_at(k0 + lid.y, j);
    workgroupBarrier();
    for (var k = 0u; k < TS; k++) { acc += As[lid.y][k] * Bs[k][lid.x]; }
    workgroupBarrier();
  }
  if (i < p.M && j < p.N) {
    let o = i * p.ldc + j;
    if (p.accumulate == 1u) { C[o] = C[o] + acc; } else { C[o] = acc; }
  }
}
`;

export interface GemmOperand {
  buffer: GPUBuffer;
  /** Floats between consecutive stored rows. */
  ld: number;
  /** Read the stored matrix transposed. */
  trans: boolean;
}

/** Record C [M, N] = op(A) op(B) (accumulate: C += op(A) op(B)), C's rows N floats apart. */
export function gemm(rec: Recorder, a: GemmOperand, b: GemmOperand, c: GPUBuffer, M: number, N: number, K: number, accumulate: boolean): void {
  const pipeline = rec.rt.pipeline("train.gemm", () => GRID_WGSL + GEMM);
  const tilesN = Math.ceil(N / TILE);
  rec.dispatch(pipeline, [a.buffer, b.buffer, c],
    { u: [M, N, K, a.ld, b.ld, N, a.trans ? 1 : 0, b.trans ? 1 : 0, accumulate ? 1 : 0, tilesN] },
    Math.ceil(M / TILE) * tilesN, "train.gemm");
}
