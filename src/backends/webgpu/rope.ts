// Rotary position embedding, in place on x [T, heads, headDim]: pair i of a head at row t turns
// by the angle whose cosine and sine are angles[t, i] (computed on the host in float64 for this
// forward's positions: WGSL's cos/sin are only accurate to 2⁻¹¹ within [−π, π], and angles
// reach thousands of radians). One thread per (row, head, pair).

import { GRID_WGSL, type Recorder } from "./runtime.js";
import type { RopeStyle } from "../kernels.js";

const ROPE = /* wgsl */ `
struct Params { T: u32, heads: u32, head_dim: u32, half: u32, interleaved: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read> angles: array<vec2<f32>>;   // [T, half] (cos, sin)

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let k = group_index(wid, nwg) * 64u + tid;
  if (k >= p.T * p.heads * p.half) { return; }
  let i = k % p.half;
  let th = k / p.half;                  // row · heads + head
  let t = th / p.heads;
  let o = th * p.head_dim;
  let a = select(o + i, o + 2u * i, p.interleaved == 1u);
  let b = select(a + p.half, a + 1u, p.interleaved == 1u);
  let cs = angles[t * p.half + i];
  let x0 = X[a];
  let x1 = X[b];
  X[a] = x0 * cs.x - x1 * cs.y;
  X[b] = x0 * cs.y + x1 * cs.x;
}
`;

/** (cos, sin) of positions[t] · invFreq[i] for every row t and pair i < invFreq.length. */
export function ropeAngles(positions: Int32Array, invFreq: Float32Array): Float32Array {
  const half = invFreq.length, out = new Float32Array(positions.length * half * 2);
  for (let t = 0; t < positions.length; t++) {
    for (let i = 0; i < half; i++) {
      const angle = positions[t] * invFreq[i];
      out[2 * (t * half + i)] = Math.cos(angle);
      out[2 * (t * half + i) + 1] = Math.sin(angle);
    }
  }
  return out;
}

export function rope(rec: Recorder, x: GPUBuffer, T: number, heads: number, headDim: number, ropeDims: number, angles: GPUBuffer, style: RopeStyle): void {
  const pipeline = rec.rt.pipeline("rope", () => GRID_WGSL + ROPE);
  const half = ropeDims / 2;
  rec.dispatch(pipeline, [x, angles], { u: [T, heads, headDim, half, style === "interleaved" ? 1 : 0] }, Math.ceil((T * heads * half) / 64), "rope");
}
