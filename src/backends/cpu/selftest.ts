// Self-test: every kernel of a backend on small random inputs, for every storage type, against a
// reference backend (the pure TS one). `toy install` reports the result.
//
// Errors are max |out - ref| / max |ref| (relative to the output's scale). Tolerances:
// - float kernels and F32/F16/BF16 matmul: 1e-4 (float32 accumulation vs the reference's float64;
//   F16/BF16 weights are decoded exactly);
// - quantized matmul: 3e-2 — the activation row is quantized to 8 bits per block of 32
//   (a step of amax/127, so ≤ 0.4 % of the block's largest value per element) before the
//   integer dot product, as llama.cpp does;
// - getRows: 1e-6 (the same dequantization formulas; in practice exact);
// - attention over F16 / Q8_0 cached keys and values: 1e-4, both backends read the same stored values.

import { GGMLType, typeName } from "../../io/gguf/types.js";
import { quantize } from "../../quant/index.js";
import type { Weight } from "../../tensor/weight.js";
import type { AttentionOptions, Kernels, KVRows } from "../kernels.js";

export interface SelfTestResult {
  kernel: string;
  /** Storage type, for matmul and getRows. */
  type?: string;
  maxError: number;
  tolerance: number;
  ok: boolean;
  error?: string;
}

export const MATMUL_TYPES: readonly number[] = [
  GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q5_0, GGMLType.Q5_1,
  GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K, GGMLType.IQ4_NL, GGMLType.IQ4_XS,
];

export const isFloatType = (t: number) => t === GGMLType.F32 || t === GGMLType.F16 || t === GGMLType.BF16;

/** A small deterministic PRNG (mulberry32) giving standard-normal-ish values. */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0;
  const u = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = scale * Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
  return out;
}

export function makeWeight(type: number, rows: number, cols: number, seed: number): Weight {
  const data = randn(rows * cols, seed, 0.5);
  return { name: `test.${typeName(type)}`, type, dims: [cols, rows], cols, rows, bytes: quantize(type, data, rows, cols) };
}

export function relError(out: Float32Array, ref: Float32Array): number {
  let maxRef = 0, maxErr = 0;
  for (let i = 0; i < ref.length; i++) {
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
    const e = Math.abs(out[i] - ref[i]);
    maxErr = Math.max(maxErr, Number.isNaN(e) ? Infinity : e);
  }
  return maxRef > 0 ? maxErr / maxRef : maxErr;
}

/** bf16Activations: the kernels round activations to bf16 before a BF16 weight's product (cpu info.bf16). */
export function selfTest(kernels: Kernels, reference: Kernels, opts: { bf16Activations?: boolean } = {}): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const check = (kernel: string, tolerance: number, run: () => number, type?: string) => {
    try {
      const maxError = run();
      results.push({ kernel, type, maxError, tolerance, ok: maxError <= tolerance });
    } catch (e) {
      results.push({ kernel, type, maxError: Infinity, tolerance, ok: false, error: (e as Error).message });
    }
  };
  const both = (n: number, f: (k: Kernels, out: Float32Array) => void) => {
    const a = new Float32Array(n), b = new Float32Array(n);
    f(kernels, a);
    f(reference, b);
    return relError(a, b);
  };

  const T = 5, rows = 12, cols = 512;
  const x = randn(T * cols, 1);
  for (const type of MATMUL_TYPES) {
    const w = makeWeight(type, rows, cols, 100 + type);
    // bf16 activations keep 8 significant bits (≤ 2⁻⁹ relative per value): ~2e-3 of the largest output.
    const bf16 = type === GGMLType.BF16 && opts.bf16Activations;
    const tolerance = bf16 ? 1e-2 : isFloatType(type) ? 1e-4 : 3e-2;
    check("matmul", tolerance, () => both(T * rows, (k, out) => k.matmul(x, w, T, out)), typeName(type));
    const ids = Int32Array.from([3, 0, 11, 3]);
    check("getRows", 1e-6, () => both(ids.length * cols, (k, out) => k.getRows(w, ids, out)), typeName(type));
  }

  const n = 96, R = 3;
  const xr = randn(R * n, 2), g = randn(n, 3), bias = randn(n, 4);
  check("rmsNorm", 1e-4, () => both(R * n, (k, out) => k.rmsNorm(xr, g, R, n, 1e-5, out)));
  check("layerNorm", 1e-4, () => both(R * n, (k, out) => k.layerNorm(xr, g, bias, R, n, 1e-5, out)));
  check("layerNorm (no bias)", 1e-4, () => both(R * n, (k, out) => k.layerNorm(xr, g, null, R, n, 1e-5, out)));

  const nH = 4, nKV = 2, hd = 16, TT = 3;
  const invFreq = Float32Array.from({ length: hd / 2 }, (_, i) => Math.pow(10000, (-2 * i) / hd));
  const positions = Int32Array.from([0, 7, 1234]);
  for (const style of ["interleaved", "neox"] as const) {
    for (const ropeDims of [hd, hd / 2]) {
      check(`rope (${style}, ${ropeDims}/${hd} dims)`, 1e-4, () => both(TT * nH * hd, (k, out) => {
        out.set(randn(TT * nH * hd, 5));
        k.rope(out, TT, nH, hd, ropeDims, positions, invFreq, style);
      }));
    }
  }

  const nKeys = 9, pos0 = 6;
  const q = randn(TT * nH * hd, 6);
  const kc = f32Rows(randn(nKeys * nKV * hd, 7)), vc = f32Rows(randn(nKeys * nKV * hd, 8));
  const variants: [string, AttentionOptions][] = [
    ["causal", { scale: 1 / Math.sqrt(hd), softcap: 0, window: 0, causal: true }],
    ["bidirectional", { scale: 1 / Math.sqrt(hd), softcap: 0, window: 0, causal: false }],
    ["window 4, softcap 5", { scale: 0.3, softcap: 5, window: 4, causal: true }],
  ];
  for (const [name, o] of variants) {
    check(`attention (${name})`, 1e-4, () => both(TT * nH * hd, (k, out) => k.attention(q, kc, vc, TT, pos0, nKeys, nH, nKV, hd, o, out)));
  }
  // Cached rows in F16 and Q8_0 (blocks of 32 along a head), over enough keys for several chunks.
  const hd2 = 32, keys2 = 300, q2 = randn(TT * nH * hd2, 11), k2 = randn(keys2 * nKV * hd2, 12), v2 = randn(keys2 * nKV * hd2, 13);
  for (const [name, type] of [["f16", GGMLType.F16], ["q8_0", GGMLType.Q8_0]] as const) {
    const kq: KVRows = { type: name, bytes: quantize(type, k2, keys2, nKV * hd2) }, vq: KVRows = { type: name, bytes: quantize(type, v2, keys2, nKV * hd2) };
    check(`attention (${name} cache)`, 1e-4, () => both(TT * nH * hd2, (k, out) => k.attention(q2, kq, vq, TT, keys2 - TT, keys2, nH, nKV, hd2, variants[0][1], out)));
  }

  const m = 1000;
  const ea = randn(m, 9, 3), eb = randn(m, 10);
  check("swiglu", 1e-4, () => both(m, (k, out) => k.swiglu(ea, eb, out)));
  check("geglu", 1e-4, () => both(m, (k, out) => k.geglu(ea, eb, out)));
  check("gelu", 1e-4, () => both(m, (k, out) => k.gelu(ea, out)));
  check("add", 1e-6, () => both(m, (k, out) => k.add(ea, eb, out)));
  check("softmax", 1e-4, () => both(4 * 250, (k, out) => { out.set(ea); k.softmax(out, 4, 250); }));
  return results;
}

/** Float32 values as the rows of an f32 KV cache. */
export function f32Rows(x: Float32Array): KVRows {
  return { type: "f32", bytes: new Uint8Array(x.buffer, x.byteOffset, x.byteLength) };
}
