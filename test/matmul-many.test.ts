// The cpu backend's matmulMany (several weights times the same activations as one pool job: a
// layer's q, k, v, or gate and up) against one matmul per weight: the same bits for every storage
// type, for decode (T = 1) and prompt (T = 7, 24) shapes, on 1 and 2 threads, packed or not; and the
// primitive's fallback when the weights' activations are quantized differently.

import { test } from "node:test";
import assert from "node:assert/strict";
import { loadCpuBackend, type CpuBackend } from "../src/backends/cpu/index.js";
import { MATMUL_TYPES, makeWeight, randn } from "../src/backends/cpu/selftest.js";
import { GGMLType, typeName } from "../src/io/gguf/types.js";
import { matmulMany } from "../src/primitives/matmul.js";
import { Tensor } from "../src/tensor/tensor.js";
import type { Weight } from "../src/tensor/weight.js";

const loaded = loadCpuBackend();
const skip = "error" in loaded ? `cpu backend unavailable: ${loaded.error}` : false;
if (skip) console.warn(`# SKIP matmul-many tests: ${skip}`);
const cpu = loaded as CpuBackend;

const withThreads = <R>(n: number, f: () => R): R => {
  cpu.setThreads(n);
  try { return f(); } finally { cpu.setThreads(2); }
};

// Sizes of a small model's q, k, v (and one row count that is not a multiple of the kernels'
// row groups); 256 columns: a whole number of K-quant blocks.
const COLS = 256, ROWS = [96, 32, 40];

for (const type of MATMUL_TYPES) {
  for (const T of [1, 7, 24]) { // 24: prompts of the signed types take vecdot_vnni_t.h (T ≥ 12)
    test(`matmulMany ${typeName(type)} T=${T}: the bits of one matmul per weight, 1 and 2 threads`, { skip }, () => {
      const ws = ROWS.map((rows, i) => makeWeight(type, rows, COLS, 100 + i));
      const x = randn(T * COLS, 7);
      const one = ws.map((w) => {
        const out = new Float32Array(T * w.rows);
        cpu.kernels.matmul(x, w, T, out);
        return out;
      });
      for (const threads of [1, 2]) {
        const outs = ws.map((w) => new Float32Array(T * w.rows));
        const done = withThreads(threads, () => cpu.kernels.matmulMany!(x, ws, T, outs));
        assert.ok(done, "one job for weights of one type");
        ws.forEach((w, i) => assert.deepEqual(outs[i], one[i], `weight ${i}, ${threads} threads`));
        // The file's layout (not repacked) through the addon: the bits of addon.matmul.
        const raw = ws.map((w) => new Float32Array(T * w.rows));
        const desc = Int32Array.from(ws.flatMap((w) => [w.type, w.rows, 0]));
        assert.ok(withThreads(threads, () => cpu.addon.matmulMulti(x, COLS, T, ws.map((w) => w.bytes), desc, raw)));
        ws.forEach((w, i) => {
          const ref = new Float32Array(T * w.rows);
          cpu.addon.matmul(x, w.bytes, w.type, w.rows, w.cols, T, ref);
          assert.deepEqual(raw[i], ref, `weight ${i} unpacked, ${threads} threads`);
        });
      }
    });
  }
}

test("matmulMany: weights whose activations are quantized differently are refused, and the primitive falls back", { skip }, () => {
  // Q4_1 takes Q8_1 activations, Q8_0 takes Q8_0: not one job.
  const ws: Weight[] = [makeWeight(GGMLType.Q4_1, 64, COLS, 1), makeWeight(GGMLType.Q8_0, 32, COLS, 2)];
  const x = randn(COLS, 3);
  assert.equal(cpu.kernels.matmulMany!(x, ws, 1, ws.map((w) => new Float32Array(w.rows))), false);
  const bias = randn(32, 4);
  const ys = matmulMany(new Tensor([1, COLS], x, "cpu"), ws, [undefined, bias]);
  ws.forEach((w, i) => {
    const ref = new Float32Array(w.rows);
    cpu.kernels.matmul(x, w, 1, ref);
    if (i === 1) for (let r = 0; r < w.rows; r++) ref[r] += bias[r];
    assert.deepEqual(ys[i].data, ref, `weight ${i}`);
  });
});

test("matmulMany: a bad call throws a precise error instead of crashing", { skip }, () => {
  const w = makeWeight(GGMLType.Q8_0, 32, COLS, 1);
  assert.throws(() => cpu.addon.matmulMulti(new Float32Array(COLS), COLS, 1, [w.bytes], Int32Array.of(w.type, 64, 0), [new Float32Array(64)]),
    /weight 0 has \d+ bytes, needs/);
  assert.throws(() => cpu.addon.matmulMulti(new Float32Array(COLS), COLS, 1, [w.bytes], Int32Array.of(w.type, 32, 0), []), /as many outs/);
});
