// A mixture of experts' routing on the GPU, in one workgroup:
//  1. for each token (row of the router's probabilities [T, E]), its `used` most probable
//     experts, in the order blocks/hostExperts.ts route() takes them (higher probability first,
//     ties to the lower index), and their probabilities (not renormalized): ids and weights
//     [T, used], routed row t · used + s being token t's s-th expert;
//  2. the routed rows grouped by expert into tiles of up to 4 (ascending rows within an expert),
//     so that ./expertMatmul.ts reads each weight row once per tile, as ./matmul.ts does per
//     4 tokens. tiles[0] is their number; tile i is 5 words from 1 + 5 i: the expert, then 4
//     routed rows (NO_ROW where the tile is not full).
// E is small (8 to 128): each thread takes tokens tid, tid + 64, ..., then experts likewise.
// Everything stays in GPU memory for the products and their sum (./combineExperts.ts).

import { GRID_WGSL, type Recorder } from "./runtime.js";

/** How many tiles R routed rows over E experts need at most: Σ ceil(n_e / 4) over the experts used. */
export function maxExpertTiles(R: number, E: number): number {
  return Math.floor((R + 3 * Math.min(E, R)) / 4);
}

const TOP_EXPERTS = /* wgsl */ `
struct Params { T: u32, E: u32, used: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> P: array<f32>;
@group(0) @binding(2) var<storage, read_write> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> weights: array<f32>;
@group(0) @binding(4) var<storage, read_write> tiles: array<u32>;

const NO_ROW = 0xffffffffu;
var<workgroup> tile_count: array<u32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) tid: u32) {
  for (var t = tid; t < p.T; t += 64u) {
    let row = t * p.E;
    // Each pick is the first expert after the previous pick in the order (p desc, index asc).
    var last_p = 3.4e38;
    var last_e = -1;
    for (var s = 0u; s < p.used; s++) {
      var best = NO_ROW;
      var best_p = 0.0;
      for (var e = 0u; e < p.E; e++) {
        let v = P[row + e];
        let after = v < last_p || (v == last_p && i32(e) > last_e);
        if (after && (best == NO_ROW || v > best_p)) { best = e; best_p = v; }  // strictly: the lower index keeps a tie
      }
      ids[t * p.used + s] = best;
      weights[t * p.used + s] = best_p;
      last_p = best_p;
      last_e = i32(best);
    }
  }
  storageBarrier();                      // every token's ids, seen by every thread
  workgroupBarrier();
  let R = p.T * p.used;
  var mine = 0u;                         // tiles of this thread's experts
  for (var e = tid; e < p.E; e += 64u) {
    var n = 0u;
    for (var r = 0u; r < R; r++) { if (ids[r] == e) { n++; } }
    mine += (n + 3u) / 4u;
  }
  tile_count[tid] = mine;
  workgroupBarrier();
  var at = 0u;                           // this thread's first tile: after the lower threads'
  for (var i = 0u; i < tid; i++) { at += tile_count[i]; }
  if (tid == 63u) { tiles[0] = at + mine; }
  for (var e = tid; e < p.E; e += 64u) {
    var k = 0u;
    for (var r = 0u; r < R; r++) {
      if (ids[r] != e) { continue; }
      let o = 1u + 5u * at;
      if (k == 0u) {
        tiles[o] = e;
        for (var j = 1u; j < 5u; j++) { tiles[o + j] = NO_ROW; }
      }
      tiles[o + 1u + k] = r;
      k++;
      if (k == 4u) { k = 0u; at++; }
    }
    if (k > 0u) { at++; }
  }
}
`;

/** Record ids and weights [T, used] (each row of probs [T, E]'s best experts) and their tiles
 *  (1 + 5 · maxExpertTiles(T · used, E) words). */
export function topExperts(rec: Recorder, probs: GPUBuffer, T: number, E: number, used: number, ids: GPUBuffer, weights: GPUBuffer, tiles: GPUBuffer): void {
  if (!(used >= 1 && used <= E)) throw new RangeError(`topExperts: ${used} of ${E} experts`);
  const pipeline = rec.rt.pipeline("topExperts", () => GRID_WGSL + TOP_EXPERTS);
  rec.dispatch(pipeline, [probs, ids, weights, tiles], { u: [T, E, used] }, 1, "topExperts");
}
