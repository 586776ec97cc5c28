// The webgpu backend's kernels (src/backends/webgpu) against the ts backend on random inputs:
// matmul and getRows for every storage type the shaders read, norms, RoPE, attention (f32 and
// f16 caches, GQA, window, soft-cap), elementwise functions, softmax, argmax; a matrix split
// over several buffers; the same bits on every run. Skips when there is no WebGPU adapter.
//
// Errors are max |gpu − ts| / max |ts|. The shaders dequantize exactly as the ts backend and sum
// in float32 (the ts backend in float64): 1e-5 for reductions over ≤ 512 values (float32
// rounding is 6e-8 per add), 1e-6 for what involves no sum (getRows, elementwise, rope).

import { test } from "node:test";
import assert from "node:assert/strict";
import { tsKernels } from "../src/backends/index.js";
import { makeWeight, MATMUL_TYPES, randn, relError } from "../src/backends/cpu/selftest.js";
import { argmax } from "../src/backends/webgpu/argmax.js";
import { attention, type CachedKV } from "../src/backends/webgpu/attention.js";
import { binary, unary } from "../src/backends/webgpu/elementwise.js";
import { getRows } from "../src/backends/webgpu/getRows.js";
import { matmul } from "../src/backends/webgpu/matmul.js";
import { layerNorm, rmsNorm } from "../src/backends/webgpu/norms.js";
import { rope, ropeAngles } from "../src/backends/webgpu/rope.js";
import { Recorder, sizeClass } from "../src/backends/webgpu/runtime.js";
import { softmax } from "../src/backends/webgpu/softmax.js";
import { storeF16, storeQ8_0 } from "../src/backends/webgpu/storeKV.js";
import { uploadMatrix } from "../src/backends/webgpu/weights.js";
import { typeName } from "../src/io/gguf/types.js";
import { webgpu } from "./helpers/webgpu.js";

const gpu = await webgpu();
const SUM_TOL = 1e-5, EXACT_TOL = 1e-6;

/** Record with `build` (it returns the buffer to read and its length in floats), run, read. */
async function run(build: (rec: Recorder) => { out: GPUBuffer; n: number }): Promise<Float32Array> {
  const rec = new Recorder(gpu.rt!);
  const { out, n } = build(rec);
  const [bytes] = await rec.submit([{ buffer: out, bytes: n * 4 }]);
  return new Float32Array(bytes);
}

for (const type of MATMUL_TYPES) {
  test(`webgpu matmul and getRows, ${typeName(type)} weights`, { skip: gpu.skip }, async () => {
    const rows = 24, cols = 512, T = 5;
    const w = makeWeight(type, rows, cols, 7 + type);
    const x = randn(T * cols, 3);
    const ref = new Float32Array(T * rows);
    tsKernels.matmul(x, w, T, ref);
    const m = uploadMatrix(gpu.rt!, w);
    const out = await run((rec) => {
      const y = rec.buffer(T * rows * 4);
      matmul(rec, rec.upload(x), m, T, null, y);
      return { out: y, n: T * rows };
    });
    assert.ok(relError(out, ref) <= SUM_TOL, `matmul ${typeName(type)}: ${relError(out, ref)}`);
    const ids = Int32Array.from([3, 0, 23, 3]);
    const rowsRef = new Float32Array(ids.length * cols);
    tsKernels.getRows(w, ids, rowsRef);
    const got = await run((rec) => {
      const y = rec.buffer(ids.length * cols * 4);
      getRows(rec, m, rec.upload(ids), ids.length, y);
      return { out: y, n: ids.length * cols };
    });
    assert.ok(relError(got, rowsRef) <= EXACT_TOL, `getRows ${typeName(type)}: ${relError(got, rowsRef)}`);
  });
}

test("webgpu matmul over a weight split into parts, with a bias; same bits on every run", { skip: gpu.skip }, async () => {
  const rows = 37, cols = 64, T = 9;
  const w = makeWeight(8 /* Q8_0 */, rows, cols, 1);
  const x = randn(T * cols, 2), bias = randn(rows, 3);
  const ref = new Float32Array(T * rows);
  tsKernels.matmul(x, w, T, ref);
  for (let t = 0; t < T; t++) for (let r = 0; r < rows; r++) ref[t * rows + r] += bias[r];
  const whole = uploadMatrix(gpu.rt!, w);
  const split = uploadMatrix(gpu.rt!, w, 10 * (w.bytes.byteLength / rows)); // 10 rows per part
  assert.equal(split.parts.length, 4);
  const outs: Float32Array[] = [];
  for (const m of [whole, split, whole]) {
    outs.push(await run((rec) => {
      const y = rec.buffer(T * rows * 4);
      matmul(rec, rec.upload(x), m, T, rec.upload(bias), y);
      return { out: y, n: T * rows };
    }));
  }
  assert.ok(relError(outs[0], ref) <= SUM_TOL);
  assert.deepEqual(outs[1], outs[0], "split weight: the same bits");
  assert.deepEqual(outs[2], outs[0], "second run: the same bits");
});

test("webgpu rmsNorm, layerNorm, softmax", { skip: gpu.skip }, async () => {
  const rows = 6, n = 200;
  const x = randn(rows * n, 4), w = randn(n, 5), b = randn(n, 6);
  const refs = [new Float32Array(rows * n), new Float32Array(rows * n), Float32Array.from(x)];
  tsKernels.rmsNorm(x, w, rows, n, 1e-6, refs[0]);
  tsKernels.layerNorm(x, w, b, rows, n, 1e-5, refs[1]);
  tsKernels.softmax(refs[2], rows, n);
  const kernels = [
    (rec: Recorder, y: GPUBuffer) => rmsNorm(rec, rec.upload(x), rec.upload(w), rows, n, 1e-6, y),
    (rec: Recorder, y: GPUBuffer) => layerNorm(rec, rec.upload(x), rec.upload(w), rec.upload(b), rows, n, 1e-5, y),
    (rec: Recorder, y: GPUBuffer) => softmax(rec, rec.upload(x), rows, n, y),
  ];
  for (const [i, k] of kernels.entries()) {
    const out = await run((rec) => { const y = rec.buffer(rows * n * 4); k(rec, y); return { out: y, n: rows * n }; });
    assert.ok(relError(out, refs[i]) <= SUM_TOL, `${["rmsNorm", "layerNorm", "softmax"][i]}: ${relError(out, refs[i])}`);
  }
});

test("webgpu elementwise: add, swiglu, geglu, gelu, scale, softcap", { skip: gpu.skip }, async () => {
  const n = 300, a = randn(n, 7, 4), b = randn(n, 8);
  const cases: [string, (rec: Recorder, x: GPUBuffer, y: GPUBuffer, out: GPUBuffer) => void, (i: number) => number][] = [
    ["add", (rec, x, y, o) => binary(rec, "add", x, y, n, o), (i) => a[i] + b[i]],
    ["swiglu", (rec, x, y, o) => binary(rec, "swiglu", x, y, n, o), (i) => (a[i] / (1 + Math.exp(-a[i]))) * b[i]],
    ["scale", (rec, x, _y, o) => unary(rec, "scale", x, n, o, 0.5), (i) => a[i] * 0.5],
    ["softcap", (rec, x, _y, o) => unary(rec, "softcap", x, n, o, 3), (i) => 3 * Math.tanh(a[i] / 3)],
  ];
  const gelu = new Float32Array(n), geglu = new Float32Array(n);
  tsKernels.gelu(a, gelu);
  tsKernels.geglu(a, b, geglu);
  cases.push(["gelu", (rec, x, _y, o) => unary(rec, "gelu", x, n, o), (i) => gelu[i]]);
  cases.push(["geglu", (rec, x, y, o) => binary(rec, "geglu", x, y, n, o), (i) => geglu[i]]);
  for (const [name, k, f] of cases) {
    const out = await run((rec) => { const o = rec.buffer(n * 4); k(rec, rec.upload(a), rec.upload(b), o); return { out: o, n }; });
    const ref = Float32Array.from({ length: n }, (_, i) => f(i));
    assert.ok(relError(out, ref) <= 1e-6, `${name}: ${relError(out, ref)}`);
  }
});

test("webgpu rope, interleaved and neox", { skip: gpu.skip }, async () => {
  const T = 3, heads = 4, headDim = 16, ropeDims = 12;
  const positions = Int32Array.from([0, 7, 1500]);
  const invFreq = Float32Array.from({ length: ropeDims / 2 }, (_, i) => 10000 ** (-2 * i / ropeDims));
  for (const style of ["interleaved", "neox"] as const) {
    const x = randn(T * heads * headDim, 9);
    const ref = Float32Array.from(x);
    tsKernels.rope(ref, T, heads, headDim, ropeDims, positions, invFreq, style);
    const out = await run((rec) => {
      const b = rec.upload(x);
      rope(rec, [{ buffer: b, heads }], T, headDim, ropeDims, rec.upload(ropeAngles(positions, invFreq)), style);
      return { out: b, n: x.length };
    });
    assert.ok(relError(out, ref) <= EXACT_TOL, `rope ${style}: ${relError(out, ref)}`);
    // Two tensors in one dispatch (q with 4 heads, k with 2): each as if alone.
    const k = randn(T * 2 * headDim, 10), refK = Float32Array.from(k);
    tsKernels.rope(refK, T, 2, headDim, ropeDims, positions, invFreq, style);
    const both = await run((rec) => {
      const bq = rec.upload(x), bk = rec.upload(k), out = rec.buffer((x.length + k.length) * 4);
      rope(rec, [{ buffer: bq, heads }, { buffer: bk, heads: 2 }], T, headDim, ropeDims, rec.upload(ropeAngles(positions, invFreq)), style);
      rec.copy(bq, 0, out, 0, x.length * 4);
      rec.copy(bk, 0, out, x.length * 4, k.length * 4);
      return { out, n: x.length + k.length };
    });
    assert.deepEqual(both.subarray(0, x.length), out, `rope ${style}: q turned with k differs from q alone`);
    assert.ok(relError(both.subarray(x.length), refK) <= EXACT_TOL, `rope ${style} (k): ${relError(both.subarray(x.length), refK)}`);
  }
});

// Shapes: a short prompt after a few cached keys (one chunk of keys), and one or three queries
// over a longer cache (the keys split into chunks over workgroups, as in decoding).
test("webgpu attention: causal, GQA, sliding window, soft-cap; f32, f16 and q8_0 caches; keys in chunks", { skip: gpu.skip }, async () => {
  for (const [T, pos0] of [[4, 5], [1, 600], [3, 520]]) {
    const nKeys = pos0 + T, heads = 4, kvHeads = 2, headDim = 32, width = kvHeads * headDim; // q8_0 needs heads of 32s
    const q = randn(T * heads * headDim, 10), k = randn(nKeys * width, 11), v = randn(nKeys * width, 12);
    for (const opts of [
      { scale: 0.35, softcap: 0, window: 0, causal: true },
      { scale: 0.35, softcap: 2, window: 3, causal: true },
      { scale: 0.35, softcap: 0, window: 300, causal: true },
    ]) {
      for (const type of ["f32", "f16", "q8_0"] as const) {
        const kvRows = (x: Float32Array) => {
          const bytes = new Uint8Array(nKeys * width * (type === "f32" ? 4 : 2));
          tsKernels.storeKV(x, type, bytes, 0);
          return { type, bytes };
        };
        const ref = new Float32Array(T * heads * headDim);
        tsKernels.attention(q, kvRows(k), kvRows(v), T, pos0, nKeys, heads, kvHeads, headDim, opts, ref);
        const out = await run((rec) => {
          const store = (): CachedKV => {
            if (type === "f32") return { keys: rec.upload(k), values: rec.upload(v) };
            if (type === "f16") {
              const kc = rec.buffer(k.length * 2), vc = rec.buffer(v.length * 2);
              storeF16(rec, rec.upload(k), rec.upload(v), 0, k.length, kc, vc, 0);
              return { keys: kc, values: vc };
            }
            const c = { keys: rec.buffer(k.length), values: rec.buffer(v.length), keyScales: rec.buffer(k.length / 8), valueScales: rec.buffer(v.length / 8) };
            storeQ8_0(rec, rec.upload(k), rec.upload(v), 0, k.length, c, 0);
            return c;
          };
          const y = rec.buffer(ref.length * 4);
          attention(rec, rec.upload(q), store(), type, { T, row0: 0, pos0, nKeys, heads, kvHeads, headDim }, opts, y);
          return { out: y, n: ref.length };
        });
        // f16: both read the same halves unless pack2x16float rounds a value the other way (≤ 1 ulp of a half, 5e-4 relative);
        // q8_0: the same blocks unless WGSL's 1/d (2.5 ulp) puts a value on the other side of a rounding step (one step, d ≈ 1/127 of the block's largest)
        const tol = type === "f32" ? SUM_TOL : type === "f16" ? 2e-3 : 1e-2;
        assert.ok(relError(out, ref) <= tol, `attention ${type} T=${T} keys=${nKeys} ${JSON.stringify(opts)}: ${relError(out, ref)}`);
      }
    }
  }
});

test("webgpu argmax: the first of equal maxima", { skip: gpu.skip }, async () => {
  const rows = 3, n = 1000, x = randn(rows * n, 13);
  x[2 * n + 17] = 50; x[2 * n + 900] = 50; // a tie in row 2
  const rec = new Recorder(gpu.rt!);
  const y = rec.buffer(rows * 4);
  argmax(rec, rec.upload(x), rows, n, y);
  const [bytes] = await rec.submit([{ buffer: y, bytes: rows * 4 }]);
  const ids = [...new Uint32Array(bytes)];
  const host = [0, 1, 2].map((r) => { let b = 0; for (let i = 1; i < n; i++) if (x[r * n + i] > x[r * n + b]) b = i; return b; });
  assert.deepEqual(ids, host);
  assert.equal(ids[2], 17);
});

test("webgpu buffer pool: size classes are at least the request, within a quarter of it above 256 bytes", () => {
  for (const n of [1, 4, 255, 256, 257, 1000, 4096, 4100, 123_457, 3 * 2 ** 20 + 5]) {
    const c = sizeClass(n);
    assert.ok(c >= n && c % 4 === 0, `${n} → ${c}`);
    if (n > 256) assert.ok(c <= n * 1.25 + 64, `${n} → ${c}`);
  }
  assert.equal(sizeClass(4096 + 36), sizeClass(4096 + 72)); // a buffer that grows a little is reused
});
