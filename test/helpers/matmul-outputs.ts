// The cpu backend's matmul outputs on fixed random cases, for comparing its SIMD paths bit by bit:
// test/cpu-backend.test.ts runs this file in a child process with TOY_SIMD=avx2 (the addon picks
// its instruction set once, at load) and compares the bytes with its own, widest-path results.
//   node dist/test/helpers/matmul-outputs.js   → one line of JSON: { simd, outputs: [base64, …] }

import { fileURLToPath } from "node:url";
import { loadCpuBackend, type CpuBackend } from "../../src/backends/cpu/index.js";
import { MATMUL_TYPES, makeWeight, randn } from "../../src/backends/cpu/selftest.js";

/** Row counts off and on the kernels' 8-row groups; T = 1..3 (one activation row per kernel call) and 4..17
 *  (four per call, then the rest one by one). */
const SHAPES = [[37, 512], [64, 1536], [200, 256]];
const ACTIVATION_ROWS = [1, 2, 3, 4, 5, 9, 17];

export function matmulOutputs(cpu: CpuBackend): Float32Array[] {
  const outs: Float32Array[] = [];
  for (const type of MATMUL_TYPES)
    for (const [rows, cols] of SHAPES) {
      const w = makeWeight(type, rows, cols, 40 + type + rows);
      for (const T of ACTIVATION_ROWS) {
        const out = new Float32Array(T * rows);
        cpu.kernels.matmul(randn(T * cols, 50 + T + cols), w, T, out);
        outs.push(out);
      }
    }
  return outs;
}

/** The storage type of each of matmulOutputs' cases, in the same order. */
export function matmulOutputTypes(): number[] {
  return MATMUL_TYPES.flatMap((type) => new Array<number>(SHAPES.length * ACTIVATION_ROWS.length).fill(type));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const cpu = loadCpuBackend();
  if ("error" in cpu) throw new Error(cpu.error);
  for (const threads of [1, 2]) {
    cpu.setThreads(threads);
    const outputs = matmulOutputs(cpu).map((o) => Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("base64"));
    process.stdout.write(JSON.stringify({ simd: cpu.info.simd, threads, outputs }) + "\n");
  }
}
