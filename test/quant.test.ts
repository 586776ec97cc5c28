// Storage types: half-float conversions, quantize/dequantize round trips for every type, and
// conformance with llama.cpp's own quantized files (values within bounds, bytes identical).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readGGUF } from "../src/io/gguf/reader.js";
import { GGMLType, typeName } from "../src/io/gguf/types.js";
import { weightFromInfo, type Weight } from "../src/tensor/weight.js";
import {
  bf16ToF32, blockSize, dequantize, dequantizeRow, dequantizer, f16ToF32, f32Bits, f32FromBits, f32ToBF16, f32ToF16,
  quantize, quantizeRow, rowBytes, writeF16,
} from "../src/quant/index.js";
import { fixtures } from "./helpers/fixtures.js";

// ---------------------------------------------------------------------------------------------
// helpers

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n standard-normal values (Box–Muller), scaled by `scale`. */
function normal(n: number, seed: number, scale = 1): Float32Array {
  const u = prng(seed);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = scale * Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
  return x;
}

/** ‖a − b‖ / ‖b‖. */
function relRms(a: Float32Array, b: Float32Array): number {
  let e = 0, s = 0;
  for (let i = 0; i < b.length; i++) {
    e += (a[i] - b[i]) ** 2;
    s += b[i] ** 2;
  }
  return s ? Math.sqrt(e / s) : Math.sqrt(e);
}

function roundTrip(type: number, x: Float32Array, rows: number, cols: number): { bytes: Uint8Array; y: Float32Array } {
  const bytes = quantize(type, x, rows, cols);
  const y = new Float32Array(x.length);
  dequantizeRow(type, bytes, 0, x.length, y);
  return { bytes, y };
}

/**
 * Bounds on ‖dequant(quant(x)) − x‖ / ‖x‖ for normal-ish data. A uniform quantizer with step Δ
 * errs by Δ/√12 RMS; with 32-value blocks the extreme is ≈ 2.3σ, so e.g. Q8_0 (Δ = amax/127)
 * expects ≈ 0.005, Q4_0 (Δ = amax/8) ≈ 0.085, Q5_0 ≈ 0.043; the K-quants' fitted scales give
 * ≈ 0.30 (Q2_K), 0.15 (Q3_K), 0.072 (Q4_K), 0.036 (Q5_K), 0.018 (Q6_K). F16 keeps 11 significant
 * bits (≈ 2^-11/√3 relative), BF16 8 (≈ 2^-8/√3). IQ4_NL and IQ4_XS (16 non-linear levels,
 * scale fitted per 32 values) measure ≈ 0.076 on the llama-q weights, a little better than Q4_0's
 * evenly spaced 16 levels; IQ4_XS's 6-bit sub-scales cost it little. Each bound leaves ~20–40% of headroom over
 * what both toy and llama.cpp measure on random and real weights.
 */
const BOUNDS: Record<string, number> = {
  F32: 0, F16: 5e-4, BF16: 4e-3, Q8_0: 0.01, Q8_1: 0.01,
  Q4_0: 0.12, Q4_1: 0.11, Q5_0: 0.06, Q5_1: 0.055,
  Q2_K: 0.35, Q3_K: 0.2, Q4_K: 0.1, Q5_K: 0.05, Q6_K: 0.025,
  IQ4_NL: 0.1, IQ4_XS: 0.1,
};

const ALL_TYPES = [
  GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q8_1, GGMLType.Q4_0, GGMLType.Q4_1,
  GGMLType.Q5_0, GGMLType.Q5_1, GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K,
  GGMLType.IQ4_NL, GGMLType.IQ4_XS,
];

/** Types whose quantizer searches for a scale (so requantizing may pick another one). */
const FITS_SCALES = new Set<number>([
  GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K, GGMLType.IQ4_NL, GGMLType.IQ4_XS,
]);

// ---------------------------------------------------------------------------------------------
// half floats

test("f16: edge cases of f32 → f16", () => {
  const cases: Array<[number, number]> = [
    [0, 0x0000], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [1 / 3, 0x3555],
    [65504, 0x7bff], // max
    [65519.99, 0x7bff], [65520, 0x7c00], // halfway to 65536 rounds to even: inf
    [1e6, 0x7c00], [-1e6, 0xfc00], [Infinity, 0x7c00], [-Infinity, 0xfc00],
    [2 ** -14, 0x0400], // smallest normal
    [2 ** -24, 0x0001], // smallest subnormal
    [1023 * 2 ** -24, 0x03ff], // largest subnormal
    [2 ** -25, 0x0000], // halfway to the smallest subnormal: ties to even (0)
    [f32FromBits(f32Bits(2 ** -25) + 1), 0x0001], // just above halfway
    [3 * 2 ** -25, 0x0002], // halfway between 1 and 2 subnormal units: to even (2)
    [-3 * 2 ** -25, 0x8002],
    [1e-10, 0x0000], [-1e-10, 0x8000], [f32FromBits(1), 0x0000], // f32 subnormal
    [1023.5 * 2 ** -24, 0x0400], // rounds up from the largest subnormal into the normals
    [1 + 2 ** -11, 0x3c00], // tie: to even
    [1 + 3 * 2 ** -11, 0x3c02], // tie: to even (up)
    [f32FromBits(f32Bits(1 + 2 ** -11) + 1), 0x3c01], // just above the tie
    [2047.5, 0x6800], [2049, 0x6800], [2051, 0x6802], // ulp 2 at 2048: ties to even
  ];
  for (const [x, h] of cases) assert.equal(f32ToF16(x), h, `f32ToF16(${x}) = 0x${f32ToF16(x).toString(16)}, want 0x${h.toString(16)}`);
  const nan = f32ToF16(NaN);
  assert.equal(nan & 0x7c00, 0x7c00);
  assert.notEqual(nan & 0x3ff, 0, "NaN stays NaN");
  assert.ok(Number.isNaN(f16ToF32(f32ToF16(f32FromBits(0x7f800001)))), "a signalling NaN stays NaN");
});

test("f16: f16 → f32 is exact and every f16 survives the round trip", () => {
  assert.equal(f16ToF32(0x0001), 2 ** -24);
  assert.equal(f16ToF32(0x03ff), 1023 * 2 ** -24);
  assert.equal(f16ToF32(0x0400), 2 ** -14);
  assert.equal(f16ToF32(0x7bff), 65504);
  assert.equal(f16ToF32(0xfbff), -65504);
  assert.equal(f16ToF32(0x7c00), Infinity);
  assert.equal(f16ToF32(0xfc00), -Infinity);
  assert.ok(Object.is(f16ToF32(0x8000), -0));
  assert.ok(Number.isNaN(f16ToF32(0x7e00)));
  for (let h = 0; h < 65536; h++) {
    const v = f16ToF32(h);
    if (Number.isNaN(v)) continue;
    assert.equal(f32ToF16(v), h, `f16 0x${h.toString(16)}`);
  }
});

test("bf16: f32 → bf16 rounds to nearest even like GGML_FP32_TO_BF16, NaN stays NaN", () => {
  const bits: Array<[number, number]> = [
    [0x00000000, 0x0000], [0x80000000, 0x8000], [0x3f800000, 0x3f80],
    [0x3f808000, 0x3f80], // tie: to even (down)
    [0x3f818000, 0x3f82], // tie: to even (up)
    [0x3f808001, 0x3f81], [0x3f807fff, 0x3f80],
    [0x7f800000, 0x7f80], [0xff800000, 0xff80], // ±inf
    [0x7f7fffff, 0x7f80], // max float rounds to inf, as ggml's does
    [0x7fc00000, 0x7fc0], [0x7f800001, 0x7fc0], // NaN: quieted, never inf
    [0xffc00001, 0xffc0],
    [0x00000001, 0x0000], [0x00018000, 0x0002], // f32 subnormals round like the rest
  ];
  for (const [u, h] of bits) {
    assert.equal(f32ToBF16(f32FromBits(u)), h, `f32ToBF16(0x${u.toString(16)}) = 0x${f32ToBF16(f32FromBits(u)).toString(16)}`);
  }
  assert.equal(bf16ToF32(0x3f80), 1);
  assert.equal(bf16ToF32(0xc040), -3);
  assert.equal(bf16ToF32(0x7f80), Infinity);
  assert.ok(Object.is(bf16ToF32(0x8000), -0));
  for (let h = 0; h < 65536; h++) {
    const v = bf16ToF32(h);
    if (Number.isNaN(v)) continue;
    assert.equal(f32ToBF16(v), h, `bf16 0x${h.toString(16)}`);
  }
});

// ---------------------------------------------------------------------------------------------
// round trips on seeded random rows

for (const type of ALL_TYPES) {
  const name = typeName(type);
  test(`${name}: quantize → dequantize error is within ${BOUNDS[name]} of RMS`, () => {
    const rows = 8, cols = 1024;
    const x = normal(rows * cols, 1234 + type, 0.02); // weight-like magnitudes
    const { bytes, y } = roundTrip(type, x, rows, cols);
    assert.equal(bytes.length, rows * rowBytes(type, cols));
    const err = relRms(y, x);
    assert.ok(err <= BOUNDS[name], `${name}: relative RMS error ${err.toFixed(5)} > ${BOUNDS[name]}`);
    if (name !== "F32") assert.ok(err > 0, `${name}: a lossy type should lose something`);
    // quantizing again what was dequantized: the block types are projections (the same values
    // and bytes come back); the K-quants and IQ4 types refit their scales, so they may move, but
    // only a little
    const again = roundTrip(type, y, rows, cols);
    const drift = relRms(again.y, y);
    if (FITS_SCALES.has(type)) {
      assert.ok(drift <= BOUNDS[name] / 2, `${name}: requantizing drifts by ${drift}`);
    } else {
      assert.equal(drift, 0, `${name}: requantizing changes the values (${drift})`);
      // Q8_1's s = d·Σq uses the unrounded d the first time, the f16 one the second
      if (name !== "Q8_1") assert.deepEqual(again.bytes, bytes, `${name}: requantized bytes differ`);
    }
  });
}

test("all-zero and constant blocks quantize without NaN", () => {
  for (const type of ALL_TYPES) {
    for (const fill of [0, 0.25, -3]) {
      const x = new Float32Array(512).fill(fill);
      const { y } = roundTrip(type, x, 1, 512);
      for (let i = 0; i < y.length; i++) assert.ok(Number.isFinite(y[i]), `${typeName(type)} fill ${fill}: ${y[i]}`);
      assert.ok(relRms(y, x) <= Math.max(BOUNDS[typeName(type)], 1e-3), `${typeName(type)} fill ${fill}: ${relRms(y, x)}`);
    }
  }
});

test("rows: offsets, whole tensors, and bad sizes", () => {
  const cols = 512, rows = 3;
  const x = normal(rows * cols, 7);
  for (const type of ALL_TYPES) {
    const stride = rowBytes(type, cols);
    const bytes = quantize(type, x, rows, cols);
    // one row at a time, into the middle of a larger output
    const out = new Float32Array(rows * cols + 5);
    for (let r = 0; r < rows; r++) dequantizeRow(type, bytes, r * stride, cols, out, 5 + r * cols);
    const w: Weight = { name: "w", type, dims: [cols, rows], cols, rows, bytes };
    assert.deepEqual(out.subarray(5), dequantize(w), typeName(type));
    // quantizeRow at an offset writes the same bytes as quantize
    const dst = new Uint8Array(stride + 3);
    quantizeRow(type, x, cols, cols, dst, 3);
    assert.deepEqual(dst.subarray(3), bytes.subarray(stride, 2 * stride), typeName(type));
    // unaligned source bytes decode the same (F32 / BF16 take a different path)
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    const y = new Float32Array(cols);
    dequantizeRow(type, shifted, 1 + stride, cols, y);
    assert.deepEqual(y, out.subarray(5 + cols, 5 + 2 * cols), `${typeName(type)} unaligned`);
  }
  assert.throws(() => rowBytes(GGMLType.Q4_0, 48), RangeError);
  assert.throws(() => dequantizeRow(GGMLType.Q4_K, new Uint8Array(100), 0, 256, new Float32Array(256)), RangeError);
  assert.throws(() => quantize(GGMLType.Q8_0, new Float32Array(64), 3, 32), RangeError);
  assert.throws(() => dequantizer(GGMLType.Q8_K + 100));
  assert.equal(rowBytes(GGMLType.Q4_K, 512), 288);
  assert.equal(rowBytes(GGMLType.F16, 7), 14);
});

test("Q8_K: d (f32) · int8 values", () => {
  const block = new Uint8Array(292);
  new DataView(block.buffer).setFloat32(0, 0.5, true);
  for (let j = 0; j < 256; j++) block[4 + j] = (j - 128) & 0xff;
  const y = new Float32Array(256);
  dequantizeRow(GGMLType.Q8_K, block, 0, 256, y);
  for (let j = 0; j < 256; j++) assert.equal(y[j], 0.5 * (j - 128));
});

test("layouts: hand-built blocks decode as ggml defines them", () => {
  // Q4_0: d = 0.5, byte j = (j+16)'s nibble << 4 | j's nibble
  const q40 = new Uint8Array(18);
  writeF16(q40, 0, 0.5);
  for (let j = 0; j < 16; j++) q40[2 + j] = j | ((15 - j) << 4);
  const y = new Float32Array(32);
  dequantizeRow(GGMLType.Q4_0, q40, 0, 32, y);
  for (let j = 0; j < 16; j++) {
    assert.equal(y[j], 0.5 * (j - 8));
    assert.equal(y[j + 16], 0.5 * (15 - j - 8));
  }
  // Q5_0: the fifth bit of value j is bit j of qh
  const q50 = new Uint8Array(22);
  writeF16(q50, 0, 1);
  q50[2] = 0b1; // value 0 gets +16
  q50[5] = 0x80; // value 31 gets +16
  dequantizeRow(GGMLType.Q5_0, q50, 0, 32, y);
  assert.equal(y[0], 0);
  assert.equal(y[1], -16);
  assert.equal(y[31], 0);
  // Q6_K: value 0 of sub-block 0 is ql[0] low nibble | qh[0] bits 0-1 << 4, minus 32, times d·scale
  const q6 = new Uint8Array(210);
  writeF16(q6, 208, 0.25);
  q6[192] = 2; // scale of values 0..15
  q6[192 + 2] = -3 & 0xff; // scale of values 32..47
  q6[0] = 0x0f; // value 0: low 15
  q6[128] = 0b11; // value 0: high 3 → 63 − 32 = 31
  q6[32] = 0x01; // value 32: low 1, high 0 → 1 − 32 = −31
  const y6 = new Float32Array(256);
  dequantizeRow(GGMLType.Q6_K, q6, 0, 256, y6);
  assert.equal(y6[0], 0.25 * 2 * 31);
  assert.equal(y6[32], 0.25 * -3 * -31);
  assert.equal(y6[1], 0.25 * 2 * -32);
});

test("layouts: IQ4_NL and IQ4_XS index the kvalues_iq4nl codebook", () => {
  const K = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];
  // IQ4_NL: d = 0.5; byte j = code of value j (low nibble) | code of value j + 16 (high)
  const nl = new Uint8Array(18);
  writeF16(nl, 0, 0.5);
  for (let j = 0; j < 16; j++) nl[2 + j] = j | ((15 - j) << 4);
  const y = new Float32Array(32);
  dequantizeRow(GGMLType.IQ4_NL, nl, 0, 32, y);
  for (let j = 0; j < 16; j++) {
    assert.equal(y[j], 0.5 * K[j]);
    assert.equal(y[j + 16], 0.5 * K[15 - j]);
  }
  // IQ4_XS: d · (ls − 32) per 32 values; ls low 4 bits in scales_l (two per byte), high 2 bits
  // in scales_h at bits 2·ib
  const xs = new Uint8Array(136);
  writeF16(xs, 0, 0.25);
  const ls = [0, 1, 31, 32, 33, 47, 48, 63];
  let h = 0;
  for (let ib = 0; ib < 8; ib++) {
    xs[4 + (ib >> 1)] |= (ls[ib] & 15) << (4 * (ib & 1));
    h |= (ls[ib] >> 4) << (2 * ib);
  }
  xs[2] = h & 0xff;
  xs[3] = h >> 8;
  for (let ib = 0; ib < 8; ib++) xs[8 + 16 * ib] = 0x3f & 0xff; // value 0 → code 15, value 16 → code 3
  const y8 = new Float32Array(256);
  dequantizeRow(GGMLType.IQ4_XS, xs, 0, 256, y8);
  for (let ib = 0; ib < 8; ib++) {
    assert.equal(y8[32 * ib], 0.25 * (ls[ib] - 32) * K[15], `sub-block ${ib}, value 0`);
    assert.equal(y8[32 * ib + 16], 0.25 * (ls[ib] - 32) * K[3], `sub-block ${ib}, value 16`);
    assert.equal(y8[32 * ib + 1], 0.25 * (ls[ib] - 32) * K[0], `sub-block ${ib}, value 1`);
  }
});

// ---------------------------------------------------------------------------------------------
// conformance with llama.cpp's quantized files

const fx = fixtures();
const FILE_TYPES = ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K",
  "IQ4_NL", "IQ4_XS"];

test("conformance: llama.cpp's files dequantize within bounds and toy's quantizer writes the same bytes",
  { skip: fx.skip }, () => {
    const dir = join(fx.dir, "models");
    const srcPath = join(dir, "llama-q-src.gguf");
    if (!existsSync(srcPath)) {
      console.warn(`SKIPPED: ${srcPath} not found`);
      return;
    }
    const src = readGGUF(srcPath);
    const reference = new Map(src.tensors.map((t) => [t.name, dequantize(weightFromInfo(src, t))]));
    const exact = new Map<string, { tensors: number; exact: number }>();
    let files = 0;
    for (const fileType of FILE_TYPES) {
      const path = join(dir, `llama-q-${fileType}.gguf`);
      if (!existsSync(path)) {
        console.warn(`SKIPPED: ${path} not found`);
        continue;
      }
      files++;
      const file = readGGUF(path);
      for (const info of file.tensors) {
        const w = weightFromInfo(file, info);
        const name = typeName(w.type);
        const ref = reference.get(info.name);
        assert.ok(ref, `${fileType}: ${info.name} is not in the source file`);
        const err = relRms(dequantize(w), ref);
        assert.ok(err <= BOUNDS[name], `${fileType} ${info.name} (${name}): relative RMS error ${err} > ${BOUNDS[name]}`);
        const mine = quantize(w.type, ref, w.rows, w.cols);
        const e = exact.get(name) ?? { tensors: 0, exact: 0 };
        e.tensors++;
        if (Buffer.compare(mine, w.bytes) === 0) e.exact++;
        exact.set(name, e);
      }
    }
    assert.ok(files > 0, "no quantized fixture files");
    console.log("byte-exact with llama.cpp:", [...exact].map(([k, v]) => `${k} ${v.exact}/${v.tensors}`).join(", "));
    for (const [name, e] of exact) assert.equal(e.exact, e.tensors, `${name}: ${e.tensors - e.exact} tensors differ from llama.cpp's bytes`);
  });

// ---------------------------------------------------------------------------------------------
// speed: the ts backend dequantizes a row at a time inside matmul

test("speed: dequantizing a 576 × 1536 matrix takes a few ms", () => {
  const rows = 1536, cols = 576;
  const x = normal(rows * cols, 99, 0.02);
  const report: string[] = [];
  for (const type of [GGMLType.Q4_1, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.F16, GGMLType.Q6_K, GGMLType.Q4_K,
    GGMLType.IQ4_NL, GGMLType.IQ4_XS]) {
    const c = blockSize(type) === 256 ? 512 : cols; // K-quants and IQ4_XS need 256-multiples
    const r = (rows * cols) / c;
    const bytes = quantize(type, x, r, c);
    const stride = rowBytes(type, c);
    const decode = dequantizer(type);
    const out = new Float32Array(rows * cols);
    const pass = () => { for (let i = 0; i < r; i++) decode(bytes, i * stride, c, out, i * c); };
    for (let k = 0; k < 5; k++) pass(); // warm up the JIT
    const reps = 10;
    const t0 = performance.now();
    for (let k = 0; k < reps; k++) pass();
    const ms = (performance.now() - t0) / reps;
    report.push(`${typeName(type)} ${ms.toFixed(2)} ms (${((rows * cols) / ms / 1e3).toFixed(0)} Mvalues/s)`);
    if (type === GGMLType.Q4_1) assert.ok(ms < 50, `Q4_1 576×1536 dequantize took ${ms.toFixed(1)} ms`);
  }
  console.log("dequantize 576×1536:", report.join(", "));
});
