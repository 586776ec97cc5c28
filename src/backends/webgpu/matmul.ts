// y = x Wᵀ (+ b): x [T, K] float32, W [rows, K] in its storage type → y [T, rows].
// One workgroup of 64 threads per (weight row, tile of 4 tokens): each thread takes columns
// tid, tid + 64, ... (reading each weight once for the 4 tokens), then the 64 partial sums are
// added in a fixed tree order, so every run gives the same bits (no atomics).
// A weight larger than one storage binding is split by rows (./weights.ts): one dispatch per
// part, each writing its columns of y.
//
// One dispatch may also do what would otherwise be the next dispatches (blocks/gpuOps.ts decides
// when): up to three weights of one input (q, k and v), the residual sum z = y + r, or a gated
// unit z = act(y₀) · y₁ (gate and up). Every value is computed as the separate kernels compute it
// (the same sums in the same order, then the same elementwise expression), so the bits are the
// same; fewer dispatches is what a decode step on a real GPU waits for (docs/performance.md).

import { BINARY, FUNCTIONS } from "./elementwise.js";
import { GRID_WGSL, type Recorder } from "./runtime.js";
import { iq4Levels, weightReader } from "./quant.js";
import type { GpuMatrix } from "./weights.js";

const TILE = 4;

/** One product of the dispatch: y = x Wᵀ (+ bias). */
export interface MatmulTerm {
  w: GpuMatrix;
  bias: GPUBuffer | null;
  y: GPUBuffer;
}

/** What the dispatch writes besides each term's y. */
export type Epilogue =
  | { kind: "none" }
  /** z = y + r (one term; r and z are [T, w.rows]). */
  | { kind: "residual"; r: GPUBuffer; z: GPUBuffer }
  /** z = act(y₀) · y₁ (two terms of the same shape, no bias). */
  | { kind: "gated"; act: "swiglu" | "geglu"; z: GPUBuffer };

/** Storage buffers the dispatch binds (an adapter may allow as few as 4 per shader stage). */
export function storageBindings(terms: number, epilogue: Epilogue["kind"]): number {
  return 1 + 2 * terms + (terms === 1 ? 1 : 0) + (epilogue === "residual" ? 2 : epilogue === "gated" ? 1 : 0);
}

const COMMON = /* wgsl */ `
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

/** The sum of every thread's acc, added in a fixed tree order. */
fn reduce(acc: vec4<f32>, tid: u32) -> vec4<f32> {
  partial[tid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) { partial[tid] += partial[tid + s]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();                 // before partial is written again
  return total;
}
`;

/** This thread's share of the tile's dot products with the row at row_byte of weight `w`. */
const dot = (w: string) => /* wgsl */ `
fn dot_${w}(row_byte: u32, t0: u32, tid: u32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  for (var c = tid; c < p.K; c += WG) { acc += weight_at_${w}(row_byte, c) * x4(t0, c); }
  return acc;
}
`;

function source(type: number, terms: number, epilogue: Epilogue): string {
  const ws = Array.from({ length: terms }, (_, i) => `W${i}`), ys = ws.map((_, i) => `Y${i}`);
  const reads = ["X", ...ws, ...(terms === 1 ? ["B"] : []), ...(epilogue.kind === "residual" ? ["R"] : [])];
  const writes = [...ys, ...(epilogue.kind === "none" ? [] : ["Z"])];
  const bindings = [
    ...reads.map((name, i) => `@group(0) @binding(${i + 1}) var<storage, read> ${name}: array<${name.startsWith("W") ? "u32" : "f32"}>;`),
    ...writes.map((name, i) => `@group(0) @binding(${reads.length + i + 1}) var<storage, read_write> ${name}: array<f32>;`),
  ];
  let body: string;
  if (epilogue.kind === "gated") {
    body = `
  if (g >= p.rows0 * tiles) { return; }
  let r = g % p.rows0;
  let t0 = (g / p.rows0) * 4u;
  let s0 = reduce(dot_W0(r * p.row_bytes, t0, tid), tid) + vec4<f32>(0.0);
  let s1 = reduce(dot_W1(r * p.row_bytes, t0, tid), tid) + vec4<f32>(0.0);
  if (tid == 0u) {
    for (var k = 0u; k < 4u; k++) {
      if (t0 + k < p.T) {
        let at = (t0 + k) * p.rows0 + r;
        let a = s0[k];
        let b = s1[k];
        Y0[at] = a;
        Y1[at] = b;
        Z[at] = ${BINARY[epilogue.act]};
      }
    }
  }`;
  } else {
    // The workgroups go to the terms in order: rows0 · tiles for the first, then the next.
    body = ws.map((w, i) => `
  if (g < p.rows${i} * tiles) {
    let r = g % p.rows${i};
    let t0 = (g / p.rows${i}) * 4u;
    let s = reduce(dot_${w}(r * p.row_bytes, t0, tid), tid);
    if (tid == 0u) {
      ${terms === 1 ? "let col = p.row0 + r;\n      let width = p.out_cols;\n      var bias = 0.0;\n      if (p.has_bias == 1u) { bias = B[col]; }" : `let col = r;\n      let width = p.rows${i};\n      let bias = 0.0;`}
      let sum = s + vec4<f32>(bias);
      for (var k = 0u; k < 4u; k++) {
        if (t0 + k < p.T) {
          let at = (t0 + k) * width + col;
          Y${i}[at] = sum[k];${epilogue.kind === "residual" ? "\n          Z[at] = sum[k] + R[at];" : ""}
        }
      }
    }
    return;
  }
  g -= p.rows${i} * tiles;`).join("");
  }
  return GRID_WGSL + FUNCTIONS + iq4Levels(type) + ws.map((w) => weightReader(type, w)).join("") + /* wgsl */ `
struct Params { T: u32, K: u32, row_bytes: u32, has_bias: u32, row0: u32, out_cols: u32, rows0: u32, rows1: u32, rows2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
${bindings.join("\n")}
` + COMMON + ws.map(dot).join("") + /* wgsl */ `
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  var g = group_index(wid, nwg);
  let tiles = (p.T + 3u) / 4u;${body}
}
`;
}

/** Record y [T, w.rows] = x [T, w.cols] Wᵀ + bias into `y`. */
export function matmul(rec: Recorder, x: GPUBuffer, w: GpuMatrix, T: number, bias: GPUBuffer | null, y: GPUBuffer): void {
  matmulGroup(rec, x, T, [{ w, bias, y }], { kind: "none" });
}

/**
 * Record the products of `terms` (all reading x [T, K]) and the epilogue in one dispatch (one per
 * part of a split weight, for a single term). Several terms share the storage type and K, have no
 * bias and are not split; a gated pair has the same rows.
 */
export function matmulGroup(rec: Recorder, x: GPUBuffer, T: number, terms: readonly MatmulTerm[], epilogue: Epilogue): void {
  const { w } = terms[0];
  const act = epilogue.kind === "gated" ? `.${epilogue.act}` : "";
  const pipeline = rec.rt.pipeline(`matmul.${w.type}.${terms.length}.${epilogue.kind}${act}`, () => source(w.type, terms.length, epilogue));
  const tiles = Math.ceil(T / TILE);
  const label = `matmul ${terms.map((t) => t.w.name).join(" + ")}${epilogue.kind === "none" ? "" : ` + ${epilogue.kind}`}`;
  const extra = epilogue.kind === "residual" ? [epilogue.r] : [];
  const out = epilogue.kind === "none" ? [] : [epilogue.z];
  if (terms.length === 1) {
    const { bias, y } = terms[0];
    for (const part of w.parts) {
      rec.dispatch(pipeline, [x, part.buffer, bias ?? rec.rt.unused, ...extra, y, ...out], // has_bias = 0: B never read
        { u: [T, w.cols, w.rowBytes, bias ? 1 : 0, part.row0, w.rows, part.rows, 0, 0] }, part.rows * tiles, label);
    }
    return;
  }
  for (const t of terms) {
    if (t.bias || t.w.parts.length !== 1 || t.w.type !== w.type || t.w.cols !== w.cols) throw new Error(`webgpu: ${label}: terms of one dispatch must share type and width, without bias or parts`);
  }
  const rows = [0, 1, 2].map((i) => terms[i]?.w.rows ?? 0);
  if (epilogue.kind === "gated" && (terms.length !== 2 || rows[0] !== rows[1])) throw new Error(`webgpu: ${label}: a gated unit needs two terms of the same rows`);
  const groups = epilogue.kind === "gated" ? rows[0] * tiles : rows.reduce((a, b) => a + b, 0) * tiles;
  rec.dispatch(pipeline, [x, ...terms.map((t) => t.w.parts[0].buffer), ...terms.map((t) => t.y), ...out],
    { u: [T, w.cols, w.rowBytes, 0, 0, 0, ...rows] }, groups, label);
}
