// Batch invariance of the cpu backend's matmul: an activation row's outputs do not depend on the
// other rows multiplied with it, nor on how many there are, nor on its position among them. A
// server batches the rows of several requests into one forward, so without this a request's answer
// would depend on the rest of the batch (issue 18: one character differed between a request run
// alone and the same request among 16 clients). Bit for bit, every storage type, 1 and 2 threads.

import { test } from "node:test";
import assert from "node:assert/strict";
import { loadCpuBackend, type CpuBackend } from "../src/backends/cpu/index.js";
import { MATMUL_TYPES, makeWeight, randn } from "../src/backends/cpu/selftest.js";
import { TYPE_TRAITS, typeName } from "../src/io/gguf/types.js";

const loaded = loadCpuBackend();
const skip = "error" in loaded ? `cpu backend unavailable: ${loaded.error}` : false;
if (skip) console.warn(`# SKIP batch-invariance tests: ${skip}`);
const cpu = loaded as CpuBackend;

const MAX_T = 20;

for (const type of MATMUL_TYPES)
  test(`matmul ${typeName(type)}: a row alone gives the same bits as inside any batch of 2..${MAX_T} rows, 1 and 2 threads`, { skip }, () => {
    // 200 rows: several row chunks and rows past a multiple of eight; 37 rows: a single short chunk;
    // 11 blocks of 32 a row: the kernels that take eight blocks (or two) at a time end on a part.
    const shapes = TYPE_TRAITS.get(type)!.blockSize === 32 ? [[200, 512], [37, 256], [48, 352]] : [[200, 512], [37, 256]];
    for (const [rows, cols] of shapes) {
      const w = makeWeight(type, rows, cols, 60 + type + rows);
      const row = randn(cols, 70 + type);
      const others = randn(MAX_T * cols, 80 + type, 3); // other requests' rows, on another scale
      for (const threads of [1, 2]) {
        cpu.setThreads(threads);
        try {
          const alone = new Float32Array(rows);
          cpu.kernels.matmul(row, w, 1, alone);
          for (let T = 2; T <= MAX_T; T++) {
            const x = others.slice(0, T * cols), out = new Float32Array(T * rows);
            for (let at = 0; at < T; at++) {
              x.set(others.subarray(0, T * cols));
              x.set(row, at * cols);
              cpu.kernels.matmul(x, w, T, out);
              const mine = out.subarray(at * rows, (at + 1) * rows);
              if (!Buffer.from(mine.buffer, mine.byteOffset, mine.byteLength).equals(Buffer.from(alone.buffer))) {
                const i = mine.findIndex((v, k) => !Object.is(v, alone[k]));
                assert.fail(`${typeName(type)} ${rows}×${cols}, ${threads} thread(s): row at ${at} of T = ${T}, output ${i}: ${mine[i]} ≠ alone ${alone[i]}`);
              }
            }
          }
        } finally {
          cpu.setThreads(2);
        }
      }
    }
  });
