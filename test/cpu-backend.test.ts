// The native cpu backend against straightforward references: every kernel, every storage type,
// bit-identical results for any thread count, and zero-copy file mapping.
//
// matmul tolerances, quantized weights: the addon quantizes each activation row to 8 bits per
// block as llama.cpp does for the weight's type (Q8_0, Q8_1 or Q8_K) and takes integer dot products.
// - against exact float64 math the error is that quantization noise: ≲ 1 % of the output's RMS
//   (checked: rms error ≤ 1e-2 · rms(ref), max error ≤ 3e-2 · max|ref|);
// - against the same activation quantization emulated in float64 only float32 rounding remains
//   (checked: ≤ 1e-4 · max|ref|), which pins down the integer kernels exactly.
// Float weights (F32/F16/BF16): float32 FMA accumulation vs float64, ≤ 1e-5 · max|ref|. Where the
// addon has AVX512-BF16 (info.bf16), BF16 weights multiply activations rounded to bf16 (llama.cpp's
// vec_dot_type for BF16): ≤ 1e-5 against float64 math on the same rounded activations (observed
// ≤ 1.4e-7), and within the rounding itself of exact math (8 significant bits: ≤ 1e-2 · max|ref|,
// observed ≤ 2.6e-3).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadCpuBackend, selfTest, type CpuBackend } from "../src/backends/cpu/index.js";
import { MATMUL_TYPES, f32Rows, isFloatType, makeWeight, randn, relError } from "../src/backends/cpu/selftest.js";
import type { KVRows, KVType } from "../src/backends/kernels.js";
import { quantize } from "../src/quant/index.js";
import { tsKernels } from "../src/backends/ts/index.js";
import { GGMLType, typeName } from "../src/io/gguf/types.js";
import { bf16ToF32, dequantize, f16ToF32, f32ToBF16, f32ToF16 } from "../src/quant/index.js";
import { attentionOutputs, matmulOutputTypes, matmulOutputs } from "./helpers/matmul-outputs.js";
import { argmax, argmaxLoop, topIds } from "../src/engines/sampling.js";
import { argmaxCases } from "./helpers/argmax-cases.js";
import type { Weight } from "../src/tensor/weight.js";

const loaded = loadCpuBackend();
const skip = "error" in loaded ? `cpu backend unavailable: ${loaded.error}` : false;
if (skip) console.warn(`# SKIP cpu-backend tests: ${skip}`);
const cpu = loaded as CpuBackend;

function refMatmul(x: Float32Array, w: Weight, T: number, emulateQ8: boolean): Float64Array {
  const W = dequantize(w);
  const xs = !emulateQ8 ? Float64Array.from(x)
    : w.type === GGMLType.BF16 ? Float64Array.from(x, (v) => bf16ToF32(f32ToBF16(v)))
    : quantizeActivations(x, T, w.cols, w.type);
  const out = new Float64Array(T * w.rows);
  for (let t = 0; t < T; t++)
    for (let r = 0; r < w.rows; r++) {
      let s = 0;
      for (let c = 0; c < w.cols; c++) s += xs[t * w.cols + c] * W[r * w.cols + c];
      out[t * w.rows + r] = s;
    }
  return out;
}

/** Round half to even, as the addon (and llama.cpp's AVX2 path) does. */
function roundEven(v: number): number {
  let q = Math.round(v);
  if (q - v === 0.5 && q % 2 !== 0) q -= 1;
  return q;
}

/** The nearest half-precision value (for the block scales llama.cpp stores as halves). */
function toHalf(v: number): number {
  return f16ToF32(f32ToF16(v));
}

/**
 * x rounded as the addon rounds it for this weight type (llama.cpp's vec_dot_type):
 * Q8_0/Q8_1 — per 32 values, codes round(x · 127/amax), scale amax/127 stored as a half;
 * Q8_K (K-quants, IQ4_XS) — per 256 values, codes round(x · −127/max) (max: the largest |x| with its
 * sign), capped at 127, scale the float 1/(−127/max).
 */
function quantizeActivations(x: Float32Array, T: number, cols: number, type: number): Float64Array {
  const f = Math.fround, out = new Float64Array(T * cols);
  const kquant = [GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K, GGMLType.IQ4_XS].includes(type);
  const B = kquant ? 256 : 32;
  for (let b = 0; b < (T * cols) / B; b++) {
    let amax = 0, max = 0;
    for (let j = 0; j < B; j++) if (Math.abs(x[B * b + j]) > amax) { amax = Math.abs(x[B * b + j]); max = x[B * b + j]; }
    if (kquant) {
      const iscale = amax ? f(-127 / max) : 0, d = amax ? f(1 / iscale) : 0;
      for (let j = 0; j < B; j++) out[B * b + j] = d * Math.min(127, roundEven(f(iscale * x[B * b + j])));
    } else {
      const d = toHalf(f(amax / 127)), id = amax ? f(127 / amax) : 0;
      for (let j = 0; j < B; j++) out[B * b + j] = d * roundEven(f(x[B * b + j] * id));
    }
  }
  return out;
}

function errors(out: Float32Array, ref: Float64Array) {
  let maxRef = 0, maxErr = 0, ss = 0, se = 0;
  for (let i = 0; i < ref.length; i++) {
    const e = Math.abs(out[i] - ref[i]);
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
    maxErr = Math.max(maxErr, Number.isNaN(e) ? Infinity : e);
    ss += ref[i] * ref[i];
    se += e * e;
  }
  return { max: maxErr / maxRef, rms: Math.sqrt(se / ss) };
}

const withThreads = <R>(n: number, f: () => R): R => {
  cpu.setThreads(n);
  try { return f(); } finally { cpu.setThreads(Math.max(2, n)); }
};

test("cpu backend: loads and reports its SIMD level and threads", { skip }, () => {
  assert.match(cpu.info.simd, /^(avx512vnni|avx2|scalar)$/);
  assert.ok(cpu.info.threads >= 1);
  assert.equal(cpu.kernels.device, "cpu");
});

for (const type of MATMUL_TYPES) {
  test(`matmul ${typeName(type)}: against float64 math, T = 1 and T = 6`, { skip }, () => {
    const rows = 37, cols = 512;
    const w = makeWeight(type, rows, cols, 7 + type);
    for (const T of [1, 6]) {
      const x = randn(T * cols, 11 + T);
      const out = new Float32Array(T * rows);
      cpu.kernels.matmul(x, w, T, out);
      const exact = errors(out, refMatmul(x, w, T, false));
      if (type === GGMLType.BF16 && cpu.info.bf16) {
        assert.ok(exact.max <= 1e-2, `BF16 T=${T}: bf16 activations vs exact math, max error ${exact.max}`);
        const emulated = errors(out, refMatmul(x, w, T, true));
        assert.ok(emulated.max <= 1e-5, `BF16 T=${T}: vs emulated bf16 activations, max error ${emulated.max}`);
      } else if (isFloatType(type)) {
        assert.ok(exact.max <= 1e-5, `${typeName(type)} T=${T}: max error ${exact.max}`);
      } else {
        assert.ok(exact.rms <= 1e-2 && exact.max <= 3e-2, `${typeName(type)} T=${T}: rms ${exact.rms}, max ${exact.max}`);
        const emulated = errors(out, refMatmul(x, w, T, true));
        // Q4_1/Q5_1 also round the activation block sums to halves (block_q8_1.s): a little more.
        const tol = type === GGMLType.Q4_1 || type === GGMLType.Q5_1 ? 1e-3 : 1e-4;
        assert.ok(emulated.max <= tol, `${typeName(type)} T=${T}: vs emulated Q8 activations, max error ${emulated.max}`);
      }
    }
  });

  test(`getRows ${typeName(type)}: the dequantized rows, exactly, also from the repacked copy`, { skip }, () => {
    const rows = 19, cols = 512; // two groups of eight rows and a tail of three (left in place by repack)
    const w = makeWeight(type, rows, cols, 3 + type);
    const ids = Int32Array.from([8, 0, 3, 3, 17, 15, 18]);
    const out = new Float32Array(ids.length * cols);
    cpu.kernels.getRows(w, ids, out);
    const W = dequantize(w);
    ids.forEach((id, i) => assert.deepEqual(out.subarray(i * cols, (i + 1) * cols), W.subarray(id * cols, (id + 1) * cols)));
    const packed = cpu.addon.repack(w.bytes, type, rows, cols);
    if (!packed) return; // no repacked layout for this type on this CPU
    const fromPacked = new Float32Array(ids.length * cols);
    cpu.addon.getRows(packed, type, rows, cols, ids, fromPacked, 1);
    assert.deepEqual(fromPacked, out);
  });
}

// IQ4 products take one of llama.cpp's paths by shape (native/vecdot_iq4.h): IQ4_NL by whether
// the rows are a multiple of 8 (repacked in llama.cpp), IQ4_XS by whether T ≥ 8 (tiled). Every
// path against float64 math on the same 8-bit activations.
test("matmul IQ4_NL / IQ4_XS: every kernel path against emulated Q8 activations", { skip }, () => {
  const cols = 512;
  for (const type of [GGMLType.IQ4_NL, GGMLType.IQ4_XS])
    for (const rows of [37, 64])
      for (const T of [1, 2, 7, 8, 9]) {
        const w = makeWeight(type, rows, cols, 60 + type + rows);
        const x = randn(T * cols, 70 + T);
        const out = new Float32Array(T * rows);
        cpu.kernels.matmul(x, w, T, out);
        const e = errors(out, refMatmul(x, w, T, true));
        assert.ok(e.max <= 1e-4, `${typeName(type)} rows=${rows} T=${T}: vs emulated Q8 activations, max error ${e.max}`);
      }
});

test("float kernels agree with the ts backend (selfTest)", { skip }, () => {
  const results = selfTest(cpu.kernels, tsKernels, { bf16Activations: cpu.info.bf16 });
  const bad = results.filter((r) => !r.ok);
  assert.deepEqual(bad, [], bad.map((r) => `${r.kernel} ${r.type ?? ""}: ${r.maxError} > ${r.tolerance} ${r.error ?? ""}`).join("; "));
  assert.ok(results.length >= 40);
});

test("kernels on larger shapes (multi-threaded paths) agree with the ts backend", { skip }, () => {
  const n = 1536, rows = 40;
  const a = randn(rows * n, 1, 2), b = randn(rows * n, 2), g = randn(n, 3);
  const both = (len: number, f: (k: typeof tsKernels, out: Float32Array) => void) => {
    const x = new Float32Array(len), y = new Float32Array(len);
    f(cpu.kernels, x);
    f(tsKernels, y);
    return relError(x, y);
  };
  assert.ok(both(rows * n, (k, o) => k.swiglu(a, b, o)) < 1e-5);
  assert.ok(both(rows * n, (k, o) => k.geglu(a, b, o)) < 1e-5);
  assert.ok(both(rows * n, (k, o) => k.add(a, b, o)) === 0);
  assert.ok(both(rows * n, (k, o) => k.rmsNorm(a, g, rows, n, 1e-6, o)) < 1e-5);
  assert.ok(both(rows * n, (k, o) => { o.set(a); k.softmax(o, rows, n); }) < 1e-5);
  const T = 24, nH = 6, nKV = 2, hd = 64, nKeys = 40, pos0 = 16;
  const q = randn(T * nH * hd, 4), kc = f32Rows(randn(nKeys * nKV * hd, 5)), vc = f32Rows(randn(nKeys * nKV * hd, 6));
  const opts = { scale: 1 / 8, softcap: 0, window: 0, causal: true };
  assert.ok(both(T * nH * hd, (k, o) => k.attention(q, kc, vc, T, pos0, nKeys, nH, nKV, hd, opts, o)) < 1e-5);
});

test("results are bit-identical for 1 and 2 threads", { skip }, () => {
  const rows = 70, cols = 512, T = 7;
  const x = randn(T * cols, 21);
  for (const type of MATMUL_TYPES) {
    const w = makeWeight(type, rows, cols, 30 + type);
    const run = (n: number) => withThreads(n, () => { const o = new Float32Array(T * rows); cpu.kernels.matmul(x, w, T, o); return o; });
    assert.deepEqual(run(1), run(2), `matmul ${typeName(type)}`);
  }
  const nT = 16, nH = 8, nKV = 4, hd = 64, nKeys = 64;
  const q = randn(nT * nH * hd, 1), kc = f32Rows(randn(nKeys * nKV * hd, 2)), vc = f32Rows(randn(nKeys * nKV * hd, 3));
  const att = (n: number) => withThreads(n, () => {
    const o = new Float32Array(nT * nH * hd);
    cpu.kernels.attention(q, kc, vc, nT, 48, nKeys, nH, nKV, hd, { scale: 0.125, softcap: 0, window: 0, causal: true }, o);
    return o;
  });
  assert.deepEqual(att(1), att(2), "attention");
  const big = randn(64 * 1536, 4);
  const sm = (n: number) => withThreads(n, () => { const o = Float32Array.from(big); cpu.kernels.softmax(o, 64, 1536); return o; });
  assert.deepEqual(sm(1), sm(2), "softmax");
  const sw = (n: number) => withThreads(n, () => { const o = new Float32Array(big.length); cpu.kernels.swiglu(big, big, o); return o; });
  assert.deepEqual(sw(1), sw(2), "swiglu");
});

// The fused calls a decode step makes (fewer calls per step) stand for the calls they fuse: the
// same bits, for a decode row and for a prompt, and for 1 and 2 threads.
test("fused calls give the bits of the calls they fuse: ropePair, storeKVPair, addRmsNorm", { skip }, () => {
  const k = cpu.kernels;
  const hd = 64, nH = 9, nKV = 3, inv = Float32Array.from({ length: hd / 2 }, (_, i) => Math.pow(10000, -2 * i / hd));
  for (const T of [1, 40]) {
    const pos = Int32Array.from({ length: T }, (_, t) => 5 + t);
    for (const style of ["interleaved", "neox"] as const) {
      const q0 = randn(T * nH * hd, 11), k0 = randn(T * nKV * hd, 12);
      const [q1, k1, q2, k2] = [q0.slice(), k0.slice(), q0.slice(), k0.slice()];
      k.rope(q1, T, nH, hd, hd, pos, inv, style);
      k.rope(k1, T, nKV, hd, hd, pos, inv, style);
      k.ropePair!(q2, k2, T, nH, nKV, hd, hd, pos, inv, style);
      assert.deepEqual([q2, k2], [q1, k1], `ropePair ${style}, T = ${T}`);
    }
    const width = nKV * hd, kx = randn(T * width, 13), vx = randn(T * width, 14);
    for (const type of ["f32", "f16", "q8_0"] as const) {
      const rb = type === "f32" ? width * 4 : type === "f16" ? width * 2 : (width / 32) * 34, at = 3 * rb, size = at + T * rb + 7;
      const [kA, vA, kB, vB] = [0, 1, 2, 3].map(() => new Uint8Array(size));
      k.storeKV(kx, type, kA, at);
      k.storeKV(vx, type, vA, at);
      k.storeKVPair!(kx, vx, type, kB, vB, at);
      assert.deepEqual([kB, vB], [kA, vA], `storeKVPair ${type}, T = ${T}`);
    }
    const n = 576, a = randn(T * n, 15), b = randn(T * n, 16), g = randn(n, 17);
    const fused = (threads: number) => withThreads(threads, () => {
      const sum = new Float32Array(T * n), out = new Float32Array(T * n);
      k.addRmsNorm!(a, b, g, T, n, 1e-5, sum, out);
      return [sum, out];
    });
    const sum = new Float32Array(T * n), out = new Float32Array(T * n);
    k.add(a, b, sum);
    k.rmsNorm(sum, g, T, n, 1e-5, out);
    assert.deepEqual(fused(1), [sum, out], `addRmsNorm, T = ${T}`);
    assert.deepEqual(fused(2), [sum, out], `addRmsNorm, 2 threads, T = ${T}`);
  }
  assert.throws(() => k.ropePair!(new Float32Array(64), new Float32Array(32), 1, 1, 1, 64, 64, Int32Array.of(0), inv, "neox"), /ropePair: bad sizes/);
  assert.throws(() => k.storeKVPair!(new Float32Array(64), new Float32Array(32), "f16", new Uint8Array(128), new Uint8Array(128), 0), /storeKVPair/);
  assert.throws(() => k.storeKVPair!(new Float32Array(64), new Float32Array(64), "f16", new Uint8Array(128), new Uint8Array(64), 0), /do not fit/);
  assert.throws(() => k.addRmsNorm!(new Float32Array(8), new Float32Array(8), new Float32Array(8), 2, 8, 1e-5, new Float32Array(16), new Float32Array(16)), /bad sizes/);
});

// Attention over a long cache is split over chunks of cached positions (flash decoding) for a few
// rows, and runs whole rows for a prompt; both merge a row's chunks in the same fixed order.
test("attention over a long cache: same bits for 1 and 2 threads, for a decode row and inside a prompt, every cache type", { skip }, () => {
  const nH = 9, nKV = 3, hd = 64, nKeys = 1000, T = 20;
  const q = randn(T * nH * hd, 41), kf = randn(nKeys * nKV * hd, 42), vf = randn(nKeys * nKV * hd, 43);
  const ggml: Record<KVType, number> = { f32: GGMLType.F32, f16: GGMLType.F16, q8_0: GGMLType.Q8_0 };
  for (const type of ["f32", "f16", "q8_0"] as const) {
    const rows = (x: Float32Array): KVRows => type === "f32" ? f32Rows(x) : { type, bytes: quantize(ggml[type], x, nKeys, nKV * hd) };
    const kc = rows(kf), vc = rows(vf);
    for (const opts of [{ scale: 0.125, softcap: 0, window: 0, causal: true }, { scale: 0.125, softcap: 30, window: 300, causal: true }]) {
      const att = (n: number, rowsT: number, pos0: number, qRows: Float32Array) => withThreads(n, () => {
        const o = new Float32Array(rowsT * nH * hd);
        cpu.kernels.attention(qRows, kc, vc, rowsT, pos0, pos0 + rowsT, nH, nKV, hd, opts, o);
        return o;
      });
      const prompt = att(1, T, nKeys - T, q);
      assert.deepEqual(att(2, T, nKeys - T, q), prompt, `${type} prompt rows, window ${opts.window}`);
      for (const t of [0, T - 1]) {
        const row = q.slice(t * nH * hd, (t + 1) * nH * hd);
        const one = att(1, 1, nKeys - T + t, row);
        assert.deepEqual(att(2, 1, nKeys - T + t, row), one, `${type} decode row, window ${opts.window}`);
        assert.deepEqual(one, prompt.slice(t * nH * hd, (t + 1) * nH * hd), `${type}: a decode row gives the bits of the same row in a prompt`);
      }
      const four = att(1, 4, nKeys - 4, q.slice(0, 4 * nH * hd));
      assert.deepEqual(att(2, 4, nKeys - 4, q.slice(0, 4 * nH * hd)), four, `${type} 4 rows`);
      const ref = new Float32Array(4 * nH * hd);
      tsKernels.attention(q.slice(0, 4 * nH * hd), kc, vc, 4, nKeys - 4, nKeys, nH, nKV, hd, opts, ref);
      assert.ok(relError(four, ref) < 1e-5, `${type}: agrees with the ts backend (${relError(four, ref)})`);
    }
  }
});

// The AVX-512 VNNI kernels (fused decode Q4_1/Q8_0, prompt path) promise the AVX2 kernels' bits:
// the same integer sums and the same float operations in the same order, per output. BF16 is
// left out where the addon rounds its activations to bf16 (info.bf16: other numerics, checked
// above against emulated bf16 activations and by test/batch-invariance.test.ts).
const vnniSkip = skip || (cpu.info.simd !== "avx512vnni" && "this CPU has no AVX-512 VNNI: only the AVX2 path runs");
if (vnniSkip && !skip) console.warn(`# SKIP VNNI-vs-AVX2 bit comparison: ${vnniSkip}`);
test("AVX-512 VNNI kernels give exactly the AVX2 kernels' results, for 1 and 2 threads", { skip: vnniSkip }, () => {
  const helper = fileURLToPath(new URL("./helpers/matmul-outputs.js", import.meta.url));
  const r = spawnSync(process.execPath, [helper], { encoding: "utf8", env: { ...process.env, TOY_SIMD: "avx2" }, timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { simd: string; threads: number; outputs: string[] });
  const mine = matmulOutputs(cpu).map((o) => Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("base64"));
  const types = matmulOutputTypes();
  const compared = (i: number) => !(cpu.info.bf16 && types[i] === GGMLType.BF16);
  assert.equal(lines.length, 2);
  for (const { simd, threads, outputs } of lines) {
    assert.equal(simd, "avx2");
    assert.equal(outputs.length, mine.length);
    const differ = mine.map((m, i) => (!compared(i) || m === outputs[i] ? -1 : i)).filter((i) => i >= 0);
    assert.deepEqual(differ, [], `avx2 at ${threads} thread(s): ${differ.length} of ${mine.length} cases differ`);
  }
});

// Attention's AVX-512 pass promises the AVX2 pass's bits (native/attention.c): the same score
// chains, and a softmax whose 16-lane e^x does the 8-lane one's operations lane by lane and adds
// its halves in the 8-lane order.
test("AVX-512 attention gives exactly the AVX2 attention's results, for 1 and 2 threads", { skip: vnniSkip }, () => {
  const helper = fileURLToPath(new URL("./helpers/matmul-outputs.js", import.meta.url));
  const r = spawnSync(process.execPath, [helper], { encoding: "utf8", env: { ...process.env, TOY_SIMD: "avx2" }, timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const mine = attentionOutputs(cpu).map((o) => Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("base64"));
  for (const line of r.stdout.trim().split("\n")) {
    const { simd, threads, attention } = JSON.parse(line) as { simd: string; threads: number; attention: string[] };
    assert.equal(simd, "avx2");
    assert.equal(attention.length, mine.length);
    const differ = mine.map((m, i) => (m === attention[i] ? -1 : i)).filter((i) => i >= 0);
    assert.deepEqual(differ, [], `avx2 at ${threads} thread(s): ${differ.length} of ${mine.length} attention cases differ`);
  }
});

// The IQ4 kernels (native/vecdot_iq4.h) follow llama.cpp's float order on every path, the
// portable one included, so all instruction sets give the same bits for them.
test("IQ4_NL / IQ4_XS: the portable kernels give exactly the SIMD kernels' results", { skip }, () => {
  const helper = fileURLToPath(new URL("./helpers/matmul-outputs.js", import.meta.url));
  const r = spawnSync(process.execPath, [helper], { encoding: "utf8", env: { ...process.env, TOY_SIMD: "scalar" }, timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const types = matmulOutputTypes();
  const iq4 = (i: number) => types[i] === GGMLType.IQ4_NL || types[i] === GGMLType.IQ4_XS;
  const mine = matmulOutputs(cpu).map((o) => Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("base64"));
  assert.equal(types.length, mine.length);
  for (const line of r.stdout.trim().split("\n")) {
    const { simd, threads, outputs } = JSON.parse(line) as { simd: string; threads: number; outputs: string[] };
    assert.equal(simd, "scalar");
    const differ = mine.map((m, i) => (iq4(i) && m !== outputs[i] ? i : -1)).filter((i) => i >= 0);
    assert.deepEqual(differ, [], `scalar at ${threads} thread(s): ${differ.length} IQ4 cases differ`);
  }
});

test("argmax: the native kernel (SIMD and portable) gives the JavaScript loop's index", { skip }, () => {
  const cases = argmaxCases();
  const want = cases.map((x) => argmaxLoop(x));
  assert.deepEqual(cases.map((x) => cpu.addon.argmax!(x)), want);
  assert.deepEqual(cases.map((x) => argmax(x)), want); // engines/sampling.ts, through the addon for long rows
  const script = `import { loadCpuBackend } from ${JSON.stringify(new URL("../src/backends/cpu/index.js", import.meta.url).href)};
    import { argmaxCases } from ${JSON.stringify(new URL("./helpers/argmax-cases.js", import.meta.url).href)};
    const cpu = loadCpuBackend(); console.log(JSON.stringify({ simd: cpu.info.simd, got: argmaxCases().map((x) => cpu.addon.argmax(x)) }));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", env: { ...process.env, TOY_SIMD: "scalar" }, timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const { simd, got } = JSON.parse(r.stdout) as { simd: string; got: number[] };
  assert.equal(simd, "scalar");
  assert.deepEqual(got, want);
});

test("topIds: the native heap gives the JavaScript heap's ids, in order", { skip }, () => {
  assert.equal(typeof cpu.addon.topKHeap, "function");
  for (const x of argmaxCases().filter((c) => c.length >= 1024)) {
    for (const k of [1, 2, 40, 100, Math.floor(x.length / 4) - 1]) {
      const js = topIds(Array.from(x), k); // a plain array takes the JavaScript loop
      assert.deepEqual(topIds(x, k), js, `length ${x.length}, k ${k}`);
    }
  }
  // Values that rise along the row, so the root changes inside most blocks of eight.
  const rising = Float32Array.from({ length: 5000 }, (_, i) => i % 13 === 0 ? -i : i * 1e-3);
  assert.deepEqual(topIds(rising, 64), topIds(Array.from(rising), 64));
});

test("mapFile returns the file's bytes without copying them", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "toy-cpu-"));
  try {
    const path = join(dir, "f.bin"), empty = join(dir, "empty.bin");
    const data = new Uint8Array(100_003).map((_, i) => (i * 31 + 7) & 255);
    writeFileSync(path, data);
    writeFileSync(empty, new Uint8Array(0));
    const m = cpu.mapFile(path);
    assert.ok(m instanceof Uint8Array);
    assert.deepEqual(m, new Uint8Array(readFileSync(path)));
    m[0] ^= 1; // a private mapping: writable, never written back
    assert.equal(readFileSync(path)[0], data[0]);
    assert.equal(cpu.mapFile(empty).length, 0);
    assert.throws(() => cpu.mapFile(join(dir, "missing.bin")), /cannot open/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Resident kilobytes of this process's mappings of `path` (/proc/self/smaps). */
function residentKB(path: string): number {
  let kb = 0, inside = false;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inside = line.endsWith(path);
    else if (inside && line.startsWith("Rss:")) kb += Number(line.split(/\s+/)[1]);
  }
  return kb;
}

test("repacking a mapped weight drops its pages from memory", { skip: skip || (process.platform !== "linux" && "needs /proc/self/smaps") }, () => {
  const dir = mkdtempSync(join(tmpdir(), "toy-cpu-"));
  try {
    const rows = 3000, cols = 512, path = join(dir, "w.bin"); // F16: 3 MB, three slices of rows
    writeFileSync(path, new Uint8Array(rows * cols * 2).map((_, i) => (i * 7) & 255));
    const bytes = cpu.mapFile(path);
    let sum = 0;
    for (let i = 1; i < bytes.length; i += 4096) sum += bytes[i]; // fault every page in
    assert.ok(sum > 0 && residentKB(path) >= 2900, `resident before: ${residentKB(path)} KB`);
    const packed = cpu.addon.repack(bytes, GGMLType.F16, rows, cols);
    if (!packed) return; // no packed layout on this CPU (no AVX-512 VNNI)
    assert.ok(residentKB(path) <= 8, `resident after: ${residentKB(path)} KB`);
    assert.equal(packed.length, bytes.length);
    assert.equal(bytes[12345], (12345 * 7) & 255); // the original bytes still read back (from the file)
    // A tied embedding: repacked by its first product, then read row by row from that copy, so
    // its file pages stay out of memory.
    const mapped2 = cpu.mapFile(path);
    const w: Weight = { name: "tied", type: GGMLType.F16, dims: [cols, rows], cols, rows, bytes: mapped2 };
    cpu.kernels.matmul(new Float32Array(cols), w, 1, new Float32Array(rows));
    const before = residentKB(path);
    const ids = Int32Array.from({ length: 64 }, (_, i) => (i * 389) % rows), out = new Float32Array(64 * cols);
    cpu.kernels.getRows(w, ids, out);
    assert.ok(residentKB(path) - before <= 8, `resident after getRows: ${residentKB(path)} KB (${before} before)`);
    const expect = new Float32Array(64 * cols); // the same rows from the file's bytes (NaN payloads and all)
    cpu.addon.getRows(mapped2, w.type, rows, cols, ids, expect);
    assert.ok(Buffer.from(out.buffer).equals(Buffer.from(expect.buffer)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Products on repack()'s copy give the row-major weight's bits, for each T (1–3: decode; 4 and
 *  more: prompt rows four at a time, VF(kernel_pairs) on float weights). */
function assertPackedProductsExact(type: number, rowMajor: Uint8Array, packed: Uint8Array, rows: number, cols: number, Ts: number[], seed: number) {
  for (const T of Ts) {
    const x = randn(T * cols, seed + T), a = new Float32Array(T * rows), b = new Float32Array(T * rows);
    cpu.addon.matmul(x, rowMajor, type, rows, cols, T, a);
    cpu.addon.matmulPacked(x, packed, type, rows, cols, T, b);
    assert.deepEqual(b, a, `${typeName(type)} T=${T}`);
  }
}

// A file's F32 weights are copied into the repacked layout (huge pages, one stream for eight rows);
// an F32 weight elsewhere may be a training parameter that the optimizer updates in place, so it
// is read where it is. Products from either give the same bits.
test("F32: a mapped weight is repacked with the same products, a heap one is not", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "toy-cpu-"));
  try {
    const rows = 37, cols = 64, path = join(dir, "w.bin"); // four groups of eight rows and a tail
    const values = randn(rows * cols, 91);
    writeFileSync(path, new Uint8Array(values.buffer));
    const heap = new Uint8Array(values.buffer.slice(0));
    assert.equal(cpu.addon.repack(heap, GGMLType.F32, rows, cols), undefined);
    const packed = cpu.addon.repack(cpu.mapFile(path), GGMLType.F32, rows, cols);
    if (!packed) return; // no packed layout on this CPU (no AVX-512 VNNI)
    assertPackedProductsExact(GGMLType.F32, heap, packed, rows, cols, [1, 2, 5, 8, 9], 92);
    const ids = Int32Array.from([36, 0, 9]), out = new Float32Array(ids.length * cols);
    cpu.addon.getRows(packed, GGMLType.F32, rows, cols, ids, out, 1);
    ids.forEach((id, i) => assert.deepEqual(out.subarray(i * cols, (i + 1) * cols), values.subarray(id * cols, (id + 1) * cols)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// F16 and BF16 weights of a file are repacked too (blocks of eight values from eight rows side by
// side); decode and prompt products on that layout give the row-major products' bits. BF16 is
// left out where the addon has AVX512-BF16 (its own kernels, vecdot_bf16.h, checked above).
test("F16 / BF16: products on the repacked layout have the row-major layout's bits", { skip }, () => {
  const rows = 45, cols = 96; // a chunk of 32 rows, a packed group of eight, a tail of five
  const types = cpu.info.bf16 ? [GGMLType.F16] : [GGMLType.F16, GGMLType.BF16];
  for (const type of types) {
    const values = randn(rows * cols, 93 + type);
    const halves = Uint16Array.from(values, (v) => (type === GGMLType.F16 ? f32ToF16(v) : f32ToBF16(v)));
    const bytes = new Uint8Array(halves.buffer);
    const packed = cpu.addon.repack(bytes, type, rows, cols);
    if (!packed) continue; // no packed layout on this CPU
    assertPackedProductsExact(type, bytes, packed, rows, cols, [1, 3, 4, 7, 8, 9], 94);
  }
});

// Quantized weights are repacked by their first product (eight-row groups, block by block; Q8_0's
// steps with the eight scales in front, native/matmul.c Q8P_STEP). Every kernel path on that
// layout gives the row-major products' bits: decode (T 1–3), four activation rows at a time (T 4–11),
// and the transposed 16-row prompt kernels (T ≥ 12, vecdot_vnni_t.h).
test("quantized types: products on the repacked layout have the row-major layout's bits", { skip }, () => {
  const rows = 43, cols = 512; // two groups of 16 rows, a group of eight, a tail of three
  for (const type of MATMUL_TYPES.filter((t) => !isFloatType(t))) {
    const w = makeWeight(type, rows, cols, 95 + type);
    const packed = cpu.addon.repack(w.bytes, type, rows, cols);
    if (!packed) continue; // no packed layout for this type on this CPU
    assertPackedProductsExact(type, w.bytes, packed, rows, cols, [1, 2, 4, 7, 12, 13], 96);
  }
});

test("bad arguments throw instead of crashing", { skip }, () => {
  const w = makeWeight(8, 4, 64, 1);
  assert.throws(() => cpu.kernels.matmul(new Float32Array(10), w, 1, new Float32Array(4)), /x has/);
  assert.throws(() => cpu.kernels.matmul(new Float32Array(64), { ...w, rows: 5 }, 1, new Float32Array(5)), /weight has/);
  assert.throws(() => cpu.kernels.matmul(new Float32Array(64), { ...w, type: 99 }, 1, new Float32Array(4)), /unsupported/);
  assert.throws(() => cpu.kernels.getRows(w, Int32Array.from([4]), new Float32Array(64)), /out of range/);
  assert.throws(() => cpu.kernels.rmsNorm(new Float32Array(8), new Float32Array(8), 2, 8, 1e-5, new Float32Array(16)), /bad sizes/);
});
