// Rotary position embedding, in place on x [T, heads, headDim]: pair i of a head at row t turns
// by the angle whose cosine and sine are angles[t, i] (computed on the host in float64 for this
// forward's positions: WGSL's cos/sin are only accurate to 2⁻¹¹ within [−π, π], and angles
// reach thousands of radians). One thread per (row, head, pair). One dispatch may turn two
// tensors of the same rows (q and k): the second's threads follow the first's.

import { GRID_WGSL, type Recorder } from "./runtime.js";
import type { RopeStyle } from "../kernels.js";

const ROPE = /* wgsl */ `
struct Params { T: u32, heads: u32, head_dim: u32, half: u32, interleaved: u32, heads2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> angles: array<vec2<f32>>;   // [T, half] (cos, sin)
@group(0) @binding(2) var<storage, read_write> X: array<f32>;
`;

/** Turn pair k of X (heads per row) in place. */
const turn = (X: string, heads: string) => /* wgsl */ `
  let i = k % p.half;
  let th = k / p.half;                  // row · heads + head
  let t = th / ${heads};
  let o = th * p.head_dim;
  let a = select(o + i, o + 2u * i, p.interleaved == 1u);
  let b = select(a + p.half, a + 1u, p.interleaved == 1u);
  let cs = angles[t * p.half + i];
  let x0 = ${X}[a];
  let x1 = ${X}[b];
  ${X}[a] = x0 * cs.x - x1 * cs.y;
  ${X}[b] = x0 * cs.y + x1 * cs.x;`;

const source = (tensors: number) => GRID_WGSL + ROPE + (tensors === 2 ? "@group(0) @binding(3) var<storage, read_write> X2: array<f32>;\n" : "") + /* wgsl */ `
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let n = p.T * p.heads * p.half;
  if (group_index(wid, nwg) * 64u + tid < n) {
    let k = group_index(wid, nwg) * 64u + tid;${turn("X", "p.heads")}
  }${tensors === 2 ? ` else if (group_index(wid, nwg) * 64u + tid < n + p.T * p.heads2 * p.half) {
    let k = group_index(wid, nwg) * 64u + tid - n;${turn("X2", "p.heads2")}
  }` : ""}
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

/** A tensor [T, heads, headDim] to turn in place. */
export interface RopeTarget {
  buffer: GPUBuffer;
  heads: number;
}

/** Record the rotation of one or two tensors of T rows (the same positions and frequencies). */
export function rope(rec: Recorder, xs: readonly RopeTarget[], T: number, headDim: number, ropeDims: number, angles: GPUBuffer, style: RopeStyle): void {
  const pipeline = rec.rt.pipeline(`rope.${xs.length}`, () => source(xs.length));
  const half = ropeDims / 2, pairs = xs.reduce((n, x) => n + T * x.heads * half, 0);
  rec.dispatch(pipeline, [angles, ...xs.map((x) => x.buffer)], { u: [T, xs[0].heads, headDim, half, style === "interleaved" ? 1 : 0, xs[1]?.heads ?? 0] },
    Math.ceil(pairs / 64), xs.length === 2 ? "rope × 2" : "rope");
}
