// A mixture of experts' routing on the GPU: for each token (row of the router's probabilities
// [T, E]), its `used` most probable experts, in the order blocks/hostExperts.ts route() takes
// them (higher probability first, ties to the lower index), and their probabilities (not
// renormalized). One thread per token: E is small (8 to 128), and the choice stays in GPU memory
// for the experts' products (./expertMatmul.ts) and their sum (./combineExperts.ts).

import { GRID_WGSL, type Recorder } from "./runtime.js";

const TOP_EXPERTS = /* wgsl */ `
struct Params { T: u32, E: u32, used: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> P: array<f32>;
@group(0) @binding(2) var<storage, read_write> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> weights: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let t = group_index(wid, nwg) * 64u + tid;
  if (t >= p.T) { return; }
  let row = t * p.E;
  // Each pick is the first expert after the previous pick in the order (p desc, index asc).
  var last_p = 3.4e38;
  var last_e = -1;
  for (var s = 0u; s < p.used; s++) {
    var best = 0xffffffffu;
    var best_p = 0.0;
    for (var e = 0u; e < p.E; e++) {
      let v = P[row + e];
      let after = v < last_p || (v == last_p && i32(e) > last_e);
      if (after && (best == 0xffffffffu || v > best_p)) { best = e; best_p = v; }  // strictly: the lower index keeps a tie
    }
    ids[t * p.used + s] = best;
    weights[t * p.used + s] = best_p;
    last_p = best_p;
    last_e = i32(best);
  }
}
`;

/** Record ids [T, used] (u32) and weights [T, used] (f32): each row of probs [T, E]'s best experts. */
export function topExperts(rec: Recorder, probs: GPUBuffer, T: number, E: number, used: number, ids: GPUBuffer, weights: GPUBuffer): void {
  if (!(used >= 1 && used <= E)) throw new RangeError(`topExperts: ${used} of ${E} experts`);
  const pipeline = rec.rt.pipeline("topExperts", () => GRID_WGSL + TOP_EXPERTS);
  rec.dispatch(pipeline, [probs, ids, weights], { u: [T, E, used] }, Math.ceil(T / 64), "topExperts");
}
