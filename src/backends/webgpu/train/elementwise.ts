// The elementwise ops of training, one thread per value: gated activations (SiLU, GELU tanh
// approximation) forward and backward, a + b, dst += src, x ← s x, AdamW's update; and Σ x² as
// one partial sum per workgroup of 1,024 values (64 strided sums, then a fixed tree), which the
// host adds in float64. The same bits on every run.

import { GRID_WGSL, type Recorder } from "../runtime.js";

const ACTIVATIONS = /* wgsl */ `
fn tanh_safe(x: f32) -> f32 { let e = exp(-2.0 * abs(x)); return sign(x) * (1.0 - e) / (1.0 + e); }
const GELU_K = 0.7978845608028654;   // √(2/π)
fn sigmoid(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }
fn act_silu(x: f32) -> f32 { return x * sigmoid(x); }
/** silu'(x) = σ(x) (1 + x (1 − σ(x))) */
fn grad_silu(x: f32) -> f32 { let s = sigmoid(x); return s * (1.0 + x * (1.0 - s)); }
fn act_gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + tanh_safe(GELU_K * (x + 0.044715 * x * x * x))); }
/** gelu'(x) = ½ (1 + tanh u) + ½ x (1 − tanh² u) √(2/π) (1 + 3 · 0.044715 x²) */
fn grad_gelu(x: f32) -> f32 {
  let t = tanh_safe(GELU_K * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
}
`;

const HEADER = /* wgsl */ `
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.n) { return; }
`;

/** A kernel over n values: bindings `inputs` (read) then `outputs` (read_write), one statement body. */
function source(inputs: string[], outputs: string[], body: string, floats: string[] = [], prelude = ""): string {
  const params = ["n: u32", ...floats.map((f) => `${f}: f32`)].join(", ");
  const bindings = [...inputs.map((name) => ["read", name]), ...outputs.map((name) => ["read_write", name])]
    .map(([mode, name], k) => `@group(0) @binding(${k + 1}) var<storage, ${mode}> ${name}: array<f32>;`).join("\n");
  return `${GRID_WGSL}${prelude}\nstruct Params { ${params} }\n@group(0) @binding(0) var<uniform> p: Params;\n${bindings}\n${HEADER}  ${body}\n}\n`;
}

export type Activation = "silu" | "gelu";

function run(rec: Recorder, key: string, src: () => string, buffers: GPUBuffer[], n: number, f: number[] = []): void {
  rec.dispatch(rec.rt.pipeline(key, src), buffers, { u: [n], f }, Math.ceil(n / 64), key);
}

/** y = act(gate) ⊙ up. */
export function gated(rec: Recorder, gate: GPUBuffer, up: GPUBuffer, act: Activation, n: number, y: GPUBuffer): void {
  run(rec, `train.gated.${act}`, () => source(["G", "U"], ["Y"], `Y[i] = act_${act}(G[i]) * U[i];`, [], ACTIVATIONS), [gate, up, y], n);
}

/** dgate += act'(gate) up ∂y (if dgate), dup += act(gate) ∂y (if dup). */
export function gatedBackward(rec: Recorder, dy: GPUBuffer, gate: GPUBuffer, up: GPUBuffer, act: Activation, n: number,
  dgate: GPUBuffer | null, dup: GPUBuffer | null): void {
  if (dgate) run(rec, `train.gatedGateGrad.${act}`, () => source(["dY", "G", "U"], ["dG"], `dG[i] = dG[i] + grad_${act}(G[i]) * U[i] * dY[i];`, [], ACTIVATIONS), [dy, gate, up, dgate], n);
  if (dup) run(rec, `train.gatedUpGrad.${act}`, () => source(["dY", "G"], ["dU"], `dU[i] = dU[i] + act_${act}(G[i]) * dY[i];`, [], ACTIVATIONS), [dy, gate, dup], n);
}

/** y = a + b. */
export function add(rec: Recorder, a: GPUBuffer, b: GPUBuffer, n: number, y: GPUBuffer): void {
  run(rec, "train.add", () => source(["A", "B"], ["Y"], "Y[i] = A[i] + B[i];"), [a, b, y], n);
}

/** dst += src. */
export function accumulate(rec: Recorder, dst: GPUBuffer, src: GPUBuffer, n: number): void {
  run(rec, "train.accumulate", () => source(["S"], ["D"], "D[i] = D[i] + S[i];"), [src, dst], n);
}

/** x ← s x. */
export function scale(rec: Recorder, x: GPUBuffer, n: number, s: number): void {
  run(rec, "train.scale", () => source([], ["X"], "X[i] = p.s * X[i];", ["s"]), [x], n, [s]);
}

/** One AdamW update of θ, m, v (src/optim/adamw.ts), the gradient taken as g · grad_scale. */
export function adamw(rec: Recorder, theta: GPUBuffer, g: GPUBuffer, m: GPUBuffer, v: GPUBuffer, n: number,
  h: { b1: number; b2: number; eps: number; decay: number; stepSize: number; bc2: number; gradScale: number }): void {
  const body = `let gi = G[i] * p.grad_scale;
  let mi = p.b1 * M[i] + (1.0 - p.b1) * gi;
  let vi = p.b2 * Vv[i] + (1.0 - p.b2) * gi * gi;
  M[i] = mi;
  Vv[i] = vi;
  Th[i] = Th[i] * p.decay - p.step_size * mi / (sqrt(vi) / p.bc2 + p.eps);`;
  run(rec, "train.adamw", () => source(["G"], ["Th", "M", "Vv"], body, ["b1", "b2", "eps", "decay", "step_size", "bc2", "grad_scale"]),
    [g, theta, m, v], n, [h.b1, h.b2, h.eps, h.decay, h.stepSize, h.bc2, h.gradScale]);
}

const SUM_OF_SQUARES = /* wgsl */ `
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
var<workgroup> part: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let g = group_index(wid, nwg);
  let start = g * 1024u;
  var acc = 0.0;
  for (var k = tid; k < 1024u; k += 64u) {
    if (start + k < p.n) { let x = X[start + k]; acc += x * x; }
  }
  part[tid] = acc;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (tid < s) { part[tid] += part[tid + s]; }
    workgroupBarrier();
  }
  if (tid == 0u && start < p.n) { partials[g] = part[0]; }
}
`;

/** Values per partial sum of sumOfSquares. */
export const SUM_CHUNK = 1024;

/** Record one partial Σ x² per 1,024 values into `partials` (ceil(n / 1024) floats). */
export function sumOfSquaresPartials(rec: Recorder, x: GPUBuffer, n: number, partials: GPUBuffer): void {
  rec.dispatch(rec.rt.pipeline("train.sumOfSquares", () => GRID_WGSL + SUM_OF_SQUARES), [x, partials], { u: [n] },
    Math.ceil(n / SUM_CHUNK), "train.sumOfSquares");
}
