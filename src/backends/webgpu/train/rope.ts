// RoPE for training, forward and backward, over x [N, heads, headDim]: pair i of each head (the
// leading `dims` values turn; interleaved: 2i, 2i+1; neox: i, i + dims/2) turns by θ = p_t · f_i.
// cos θ and sin θ come in a table [N, dims/2] computed on the host in float64 (a float32 angle
// of a large position loses digits). The frequencies' gradient Σ p (−∂y_a y_b + ∂y_b y_a) is one
// thread's loop per frequency over tokens and heads: the same bits on every run.

import { GRID_WGSL, type Recorder } from "../runtime.js";

const COMMON = /* wgsl */ `
struct Params { N: u32, heads: u32, head_dim: u32, dims: u32, neox: u32 }
@group(0) @binding(0) var<uniform> p: Params;
/** The two elements of pair i of the head starting at o. */
fn pair(o: u32, i: u32) -> vec2<u32> {
  if (p.neox == 1u) { return vec2<u32>(o + i, o + i + p.dims / 2u); }
  return vec2<u32>(o + 2u * i, o + 2u * i + 1u);
}
`;

/** y = rotate(x), one thread per (token, head). */
const FORWARD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> CS: array<vec2<f32>>;   // (cos, sin) [N, dims/2]
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let th = group_index(wid, nwg) * 64u + tid;
  if (th >= p.N * p.heads) { return; }
  let t = th / p.heads;
  let o = th * p.head_dim;
  let half = p.dims / 2u;
  for (var i = p.dims; i < p.head_dim; i++) { Y[o + i] = X[o + i]; }
  for (var i = 0u; i < half; i++) {
    let cs = CS[t * half + i];
    let ab = pair(o, i);
    let x0 = X[ab.x];
    let x1 = X[ab.y];
    Y[ab.x] = x0 * cs.x - x1 * cs.y;
    Y[ab.y] = x0 * cs.y + x1 * cs.x;
  }
}
`;

/** ∂x += the inverse rotation of ∂y, one thread per (token, head). */
const INPUT_GRAD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> dY: array<f32>;
@group(0) @binding(2) var<storage, read> CS: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> dX: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let th = group_index(wid, nwg) * 64u + tid;
  if (th >= p.N * p.heads) { return; }
  let t = th / p.heads;
  let o = th * p.head_dim;
  let half = p.dims / 2u;
  for (var i = p.dims; i < p.head_dim; i++) { dX[o + i] = dX[o + i] + dY[o + i]; }
  for (var i = 0u; i < half; i++) {
    let cs = CS[t * half + i];
    let ab = pair(o, i);
    let da = dY[ab.x];
    let db = dY[ab.y];
    dX[ab.x] = dX[ab.x] + (da * cs.x + db * cs.y);
    dX[ab.y] = dX[ab.y] + (-da * cs.y + db * cs.x);
  }
}
`;

/** ∂f[i] += Σ_t p_t Σ_heads (−∂y_a y_b + ∂y_b y_a), one thread per frequency. */
const FREQUENCY_GRAD = /* wgsl */ `
@group(0) @binding(1) var<storage, read> dY: array<f32>;
@group(0) @binding(2) var<storage, read> Y: array<f32>;
@group(0) @binding(3) var<storage, read> positions: array<i32>;
@group(0) @binding(4) var<storage, read_write> dF: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.dims / 2u) { return; }
  var acc = 0.0;
  for (var t = 0u; t < p.N; t++) {
    let pos = f32(positions[t]);
    for (var h = 0u; h < p.heads; h++) {
      let ab = pair((t * p.heads + h) * p.head_dim, i);
      acc += pos * (-dY[ab.x] * Y[ab.y] + dY[ab.y] * Y[ab.x]);
    }
  }
  dF[i] = dF[i] + acc;
}
`;

export interface RopeDims { N: number; heads: number; headDim: number; dims: number; neox: boolean }

const params = (s: RopeDims) => ({ u: [s.N, s.heads, s.headDim, s.dims, s.neox ? 1 : 0] });

/** (cos θ, sin θ) of every token's pairs, θ = positions[t] · invFreq[i], in float64 then rounded. */
export function ropeTable(positions: Int32Array, invFreq: ArrayLike<number>, dims: number): Float32Array {
  const half = dims / 2, cs = new Float32Array(positions.length * half * 2);
  for (let t = 0; t < positions.length; t++) {
    for (let i = 0; i < half; i++) {
      const angle = positions[t] * invFreq[i];
      cs[(t * half + i) * 2] = Math.cos(angle);
      cs[(t * half + i) * 2 + 1] = Math.sin(angle);
    }
  }
  return cs;
}

export function ropeForward(rec: Recorder, x: GPUBuffer, table: GPUBuffer, s: RopeDims, y: GPUBuffer): void {
  rec.dispatch(rec.rt.pipeline("train.rope", () => GRID_WGSL + COMMON + FORWARD), [x, table, y], params(s),
    Math.ceil((s.N * s.heads) / 64), "train.rope");
}

/** Record dx += (if dx) and dinv += (if dinv) RoPE's gradients, from the forward's output y. */
export function ropeBackward(rec: Recorder, dy: GPUBuffer, y: GPUBuffer, positions: GPUBuffer, table: GPUBuffer, s: RopeDims,
  dx: GPUBuffer | null, dinv: GPUBuffer | null): void {
  if (dx) {
    rec.dispatch(rec.rt.pipeline("train.ropeInputGrad", () => GRID_WGSL + COMMON + INPUT_GRAD), [dy, table, dx], params(s),
      Math.ceil((s.N * s.heads) / 64), "train.ropeInputGrad");
  }
  if (dinv) {
    rec.dispatch(rec.rt.pipeline("train.ropeFrequencyGrad", () => GRID_WGSL + COMMON + FREQUENCY_GRAD), [dy, y, positions, dinv], params(s),
      Math.ceil(s.dims / 2 / 64), "train.ropeFrequencyGrad");
  }
}
