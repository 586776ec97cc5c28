// The webgpu backend's mixture-of-experts kernels (src/backends/webgpu: topExperts,
// expertMatmul, repeatRows, combineExperts) against the host: the experts route() picks (ties
// included) in its order, each routed row's product with its expert's block of a stacked weight
// for every storage type the shaders read (a weight split into parts too), the weighted sum;
// the same bits whatever the other rows of the batch. Skips when there is no WebGPU adapter.
//
// Errors are max |gpu − ts| / max |ts|, bounded as in test/webgpu-kernels.test.ts: 1e-5 for the
// products (float32 sums of ≤ 512 values in a fixed tree; the ts backend sums in float64), 1e-6
// for the weighted sum of two values (no long sum); the routing and copies are exact.

import { test } from "node:test";
import assert from "node:assert/strict";
import { tsKernels } from "../src/backends/index.js";
import { makeWeight, MATMUL_TYPES, randn, relError } from "../src/backends/cpu/selftest.js";
import { combineExperts } from "../src/backends/webgpu/combineExperts.js";
import { expertMatmul } from "../src/backends/webgpu/expertMatmul.js";
import { repeatRows } from "../src/backends/webgpu/repeatRows.js";
import { Recorder } from "../src/backends/webgpu/runtime.js";
import { maxExpertTiles, topExperts } from "../src/backends/webgpu/topExperts.js";
import { uploadMatrix } from "../src/backends/webgpu/weights.js";
import { route } from "../src/blocks/mixtureOfExperts.js";
import { typeName } from "../src/io/gguf/types.js";
import { webgpu } from "./helpers/webgpu.js";

const gpu = await webgpu();
const SUM_TOL = 1e-5, EXACT_TOL = 1e-6;

/** Record with `build` (it returns the buffers to read and their lengths in words), run, read. */
async function run(build: (rec: Recorder) => { buffer: GPUBuffer; n: number }[]): Promise<ArrayBuffer[]> {
  const rec = new Recorder(gpu.rt!);
  return rec.submit(build(rec).map(({ buffer, n }) => ({ buffer, bytes: n * 4 })));
}

const NO_ROW = 0xffffffff;

/** The routed rows grouped by expert in tiles of up to 4 (./topExperts.ts's layout, experts in
 *  ascending order as the GPU makes them for E ≤ 64): [count, (expert, 4 rows) per tile]. */
function hostTiles(ids: Uint32Array, E: number): Uint32Array {
  const tiles: number[] = [];
  for (let e = 0; e < E; e++) {
    const rows = [...ids.keys()].filter((r) => ids[r] === e);
    for (let i = 0; i < rows.length; i += 4) tiles.push(e, ...[0, 1, 2, 3].map((j) => rows[i + j] ?? NO_ROW));
  }
  return Uint32Array.from([tiles.length / 5, ...tiles]);
}

/** Each token's `used` experts as the GPU picks them: ids and weights [T, used], and their tiles. */
async function gpuTopExperts(probs: Float32Array, T: number, E: number, used: number): Promise<[Uint32Array, Float32Array, Uint32Array]> {
  const tileWords = 1 + 5 * maxExpertTiles(T * used, E);
  const [ids, weights, tiles] = await run((rec) => {
    const i = rec.buffer(T * used * 4), w = rec.buffer(T * used * 4), t = rec.buffer(tileWords * 4);
    topExperts(rec, rec.upload(probs), T, E, used, i, w, t);
    return [{ buffer: i, n: T * used }, { buffer: w, n: T * used }, { buffer: t, n: tileWords }];
  });
  const tileList = new Uint32Array(tiles);
  return [new Uint32Array(ids), new Float32Array(weights), tileList.subarray(0, 1 + 5 * tileList[0])];
}

test("webgpu topExperts: route()'s experts, best first, ties to the lower index; tiles by expert", { skip: gpu.skip }, async () => {
  const E = 8;
  const rows = [
    [0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125],  // all tied: 0, 1, 2, ...
    [0.1, 0.3, 0.05, 0.3, 0.05, 0.1, 0.05, 0.05],              // ties at the top and below
    [0, 0, 0, 0, 0, 0, 0, 1],                                  // the last expert, then zeros by index
    [0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.0, 0.1],
  ];
  const random = randn(9 * E, 11).map(Math.exp);               // 9 rows of distinct values
  const T = rows.length + 9;
  const probs = Float32Array.from([...rows.flat(), ...random]);
  for (const used of [1, 2, 3, 8]) {
    const [ids, weights, tiles] = await gpuTopExperts(probs, T, E, used);
    assert.deepEqual(tiles, hostTiles(ids, E), `top ${used}: tiles`);
    assert.ok(tiles[0] <= maxExpertTiles(T * used, E));
    for (let t = 0; t < T; t++) {
      const p = probs.subarray(t * E, (t + 1) * E);
      const want = Array.from({ length: E }, (_, e) => e).sort((a, b) => p[b] - p[a] || a - b).slice(0, used);
      assert.deepEqual([...ids.subarray(t * used, (t + 1) * used)], want, `token ${t}, top ${used}`);
      assert.deepEqual([...weights.subarray(t * used, (t + 1) * used)], want.map((e) => p[e]), `token ${t}, top ${used}: weights`);
    }
    // ... and the same experts as the host's route() (which the cpu and ts backends run)
    const byExpert: number[][] = Array.from({ length: E }, () => []);
    ids.forEach((e, i) => byExpert[e].push(Math.floor(i / used)));
    assert.deepEqual(byExpert, route(probs, T, E, used), `top ${used}`);
  }
});

test("webgpu topExperts over more experts than threads (E = 100): route()'s experts, every row in one tile", { skip: gpu.skip }, async () => {
  const E = 100, T = 21, used = 6, probs = randn(T * E, 12).map(Math.exp);
  const [ids, , tiles] = await gpuTopExperts(probs, T, E, used);
  const byExpert: number[][] = Array.from({ length: E }, () => []);
  ids.forEach((e, i) => byExpert[e].push(Math.floor(i / used)));
  assert.deepEqual(byExpert, route(probs, T, E, used));
  // thread tid groups experts tid, tid + 64: the tiles in that order; the same tiles as the host's
  const list = (t: Uint32Array) => Array.from({ length: t[0] }, (_, i) => [...t.subarray(1 + 5 * i, 6 + 5 * i)]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  assert.deepEqual(list(tiles), list(hostTiles(ids, E)));
});

for (const type of MATMUL_TYPES) {
  test(`webgpu expertMatmul, ${typeName(type)} weights`, { skip: gpu.skip }, async () => {
    const E = 4, rows = 8, cols = 512, ids = Uint32Array.from([2, 0, 3, 3, 1, 2, 0, 3, 3, 3, 2]), R = ids.length; // expert 3: a full tile and one more
    const w = makeWeight(type, E * rows, cols, 17 + type);
    const x = randn(R * cols, 5);
    const all = new Float32Array(R * E * rows);                  // every row times every expert's block
    tsKernels.matmul(x, w, R, all);
    const ref = new Float32Array(R * rows);
    ids.forEach((e, r) => ref.set(all.subarray(r * E * rows + e * rows, r * E * rows + (e + 1) * rows), r * rows));
    const m = uploadMatrix(gpu.rt!, w);
    const [out] = await run((rec) => {
      const y = rec.buffer(R * rows * 4);
      expertMatmul(rec, rec.upload(x), rec.upload(hostTiles(ids, E)), maxExpertTiles(R, E), m, rows, y);
      return [{ buffer: y, n: R * rows }];
    });
    const got = new Float32Array(out);
    assert.ok(relError(got, ref) <= SUM_TOL, `expertMatmul ${typeName(type)}: ${relError(got, ref)}`);
  });
}

test("webgpu expertMatmul: a weight split into parts; a row's bits do not depend on the other rows", { skip: gpu.skip }, async () => {
  const E = 5, rows = 6, cols = 64, ids = Uint32Array.from([4, 1, 1, 0, 3, 2, 1, 1, 1]), R = ids.length;
  const w = makeWeight(8 /* Q8_0 */, E * rows, cols, 3);
  const x = randn(R * cols, 4);
  const whole = uploadMatrix(gpu.rt!, w);
  const split = uploadMatrix(gpu.rt!, w, 7 * (w.bytes.byteLength / (E * rows))); // 7 rows per part: experts straddle parts
  assert.equal(split.parts.length, 5);
  const product = async (m: typeof whole, xs: Float32Array, is: Uint32Array) => new Float32Array((await run((rec) => {
    const y = rec.buffer(is.length * rows * 4);
    expertMatmul(rec, rec.upload(xs), rec.upload(hostTiles(is, E)), maxExpertTiles(is.length, E), m, rows, y);
    return [{ buffer: y, n: is.length * rows }];
  }))[0]);
  const batch = await product(whole, x, ids);
  assert.deepEqual(await product(split, x, ids), batch);
  assert.deepEqual(await product(whole, x, ids), batch);
  for (const r of [0, 2, 3, 5, 8]) {                          // rows alone in a tile, and rows of the full tile of expert 1
    const alone = await product(whole, x.slice(r * cols, (r + 1) * cols), ids.slice(r, r + 1));
    assert.deepEqual(alone, batch.subarray(r * rows, (r + 1) * rows), `row ${r}`);
  }
});

test("webgpu repeatRows and combineExperts: each token's rows, and their weighted sum", { skip: gpu.skip }, async () => {
  const T = 5, used = 3, d = 70;
  const x = randn(T * d, 8), out = randn(T * used * d, 9), weights = randn(T * used, 10).map(Math.abs);
  const [repeated, sum] = await run((rec) => {
    const r = rec.buffer(T * used * d * 4), y = rec.buffer(T * d * 4);
    repeatRows(rec, rec.upload(x), T, d, used, r);
    combineExperts(rec, rec.upload(out), rec.upload(weights), T, used, d, y);
    return [{ buffer: r, n: T * used * d }, { buffer: y, n: T * d }];
  });
  const wantRepeated = new Float32Array(T * used * d), wantSum = new Float32Array(T * d);
  for (let t = 0; t < T; t++) {
    for (let s = 0; s < used; s++) {
      wantRepeated.set(x.subarray(t * d, (t + 1) * d), (t * used + s) * d);
      for (let j = 0; j < d; j++) wantSum[t * d + j] += weights[t * used + s] * out[(t * used + s) * d + j];
    }
  }
  assert.deepEqual(new Float32Array(repeated), wantRepeated);
  assert.ok(relError(new Float32Array(sum), wantSum) <= EXACT_TOL, `combineExperts: ${relError(new Float32Array(sum), wantSum)}`);
});
