// The cpu backend's matmulMany (several weights times the same activations as one pool job: a
// layer's q, k, v, or gate and up) against one matmul per weight: the same bits for every storage
// type, for decode (T = 1) and prompt (T = 7, 24) shapes, on 1 and 2 threads, packed or not; weights
// of different types in one job; and the primitive's biases.

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

// A Q5_K_M file's q, k, v can be Q5_1, Q5_1 and Q8_0, and a Q4_K_M file's mix K-quants with
// 32-blocks: weights whose activations are quantized differently (Q8_1, Q8_0 with and without
// block sums, Q8_K, bf16, none) still run as one job, each reading what it reads alone.
for (const types of [[GGMLType.Q4_1, GGMLType.Q8_0], [GGMLType.Q5_1, GGMLType.Q5_1, GGMLType.Q8_0], [GGMLType.Q4_0, GGMLType.Q4_K, GGMLType.Q8_0, GGMLType.F16],
  [GGMLType.Q6_K, GGMLType.BF16, GGMLType.Q4_0, GGMLType.Q4_1]]) {
  test(`matmulMany of ${types.map(typeName).join(", ")}: one job, the bits of one matmul per weight`, { skip }, () => {
    const ws: Weight[] = types.map((type, i) => makeWeight(type, ROWS[i % ROWS.length] + 8 * i, COLS, 1 + i));
    for (const T of [1, 7, 24]) {
      const x = randn(T * COLS, 3 + T);
      for (const threads of [1, 2]) {
        const outs = ws.map((w) => new Float32Array(T * w.rows));
        assert.ok(withThreads(threads, () => cpu.kernels.matmulMany!(x, ws, T, outs)), "one job");
        ws.forEach((w, i) => {
          const ref = new Float32Array(T * w.rows);
          withThreads(threads, () => cpu.kernels.matmul(x, w, T, ref));
          assert.deepEqual(outs[i], ref, `weight ${i} (${typeName(w.type)}), T=${T}, ${threads} threads`);
        });
      }
    }
  });
}

test("matmulMany: the primitive adds each weight's bias", { skip }, () => {
  const ws: Weight[] = [makeWeight(GGMLType.Q4_1, 64, COLS, 1), makeWeight(GGMLType.Q8_0, 32, COLS, 2)];
  const x = randn(COLS, 3), bias = randn(32, 4);
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
