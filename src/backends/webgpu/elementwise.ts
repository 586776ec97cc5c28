// Elementwise functions, one thread per value:
//   unary:  scale (s · x), softcap (s · tanh(x / s)), gelu (tanh approximation)
//   binary: add (a + b), swiglu (silu(a) · b), geglu (gelu(a) · b)

import { GRID_WGSL, type Recorder } from "./runtime.js";

export const FUNCTIONS = /* wgsl */ `
fn tanh_safe(x: f32) -> f32 {                 // tanh without exp overflow (inf / inf)
  let e = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - e) / (1.0 + e);
}
fn gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + tanh_safe(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
fn silu(x: f32) -> f32 { return x / (1.0 + exp(-x)); }
`;

export type UnaryOp = "scale" | "softcap" | "gelu";
export type BinaryOp = "add" | "swiglu" | "geglu";

const UNARY: Record<UnaryOp, string> = { scale: "p.s * x", softcap: "p.s * tanh_safe(x / p.s)", gelu: "gelu(x)" };
export const BINARY: Record<BinaryOp, string> = { add: "a + b", swiglu: "silu(a) * b", geglu: "gelu(a) * b" };

const unarySource = (expr: string) => /* wgsl */ `
struct Params { n: u32, s: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.n) { return; }
  let x = X[i];
  Y[i] = ${expr};
}
`;

const binarySource = (expr: string) => /* wgsl */ `
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let i = group_index(wid, nwg) * 64u + tid;
  if (i >= p.n) { return; }
  let a = A[i];
  let b = B[i];
  Y[i] = ${expr};
}
`;

/** y = op(x) over n values (s: the scale or the cap). */
export function unary(rec: Recorder, op: UnaryOp, x: GPUBuffer, n: number, y: GPUBuffer, s = 0): void {
  const pipeline = rec.rt.pipeline(`unary.${op}`, () => GRID_WGSL + FUNCTIONS + unarySource(UNARY[op]));
  rec.dispatch(pipeline, [x, y], { u: [n], f: [s] }, Math.ceil(n / 64), op);
}

/** y = op(a, b) over n values. */
export function binary(rec: Recorder, op: BinaryOp, a: GPUBuffer, b: GPUBuffer, n: number, y: GPUBuffer): void {
  const pipeline = rec.rt.pipeline(`binary.${op}`, () => GRID_WGSL + FUNCTIONS + binarySource(BINARY[op]));
  rec.dispatch(pipeline, [a, b, y], { u: [n] }, Math.ceil(n / 64), op);
}
