// The cpu backend's matmul and attention outputs on fixed random cases, for comparing its SIMD
// paths bit by bit:
// test/cpu-backend.test.ts runs this file in a child process with TOY_SIMD=avx2 (the addon picks
// its instruction set once, at load) and compares the bytes with its own, widest-path results.
//   node dist/test/helpers/matmul-outputs.js   → a line of JSON per thread count:
//   { simd, threads, outputs: [base64, …], attention: [base64, …] }

import { fileURLToPath } from "node:url";
import { loadCpuBackend, type CpuBackend } from "../../src/backends/cpu/index.js";
import { MATMUL_TYPES, makeWeight, randn } from "../../src/backends/cpu/selftest.js";
import type { KVType } from "../../src/backends/kernels.js";
import { kvRowBytes } from "../../src/blocks/kvCacheTypes.js";
import { TYPE_TRAITS } from "../../src/io/gguf/types.js";

/** Row counts off and on the kernels' 8-row groups; T = 1..3 (one activation row per kernel call) and 4..17
 *  (four per call, then the rest one by one). The types in blocks of 32 also take rows of 11 and 19
 *  blocks: the kernels that go eight blocks (or two) at a time end on a part. */
const SHAPES = [[37, 512], [64, 1536], [200, 256]];
const PART_SHAPES = [[40, 352], [24, 608]];
const ACTIVATION_ROWS = [1, 2, 3, 4, 5, 9, 17];
const shapesOf = (type: number) => (TYPE_TRAITS.get(type)!.blockSize === 32 ? [...SHAPES, ...PART_SHAPES] : SHAPES);

export function matmulOutputs(cpu: CpuBackend): Float32Array[] {
  const outs: Float32Array[] = [];
  for (const type of MATMUL_TYPES)
    for (const [rows, cols] of shapesOf(type)) {
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
  return MATMUL_TYPES.flatMap((type) => new Array<number>(shapesOf(type).length * ACTIVATION_ROWS.length).fill(type));
}

/** Decode and prompt attention (1 and 4 query rows) over caches of every KV type, with key counts
 *  that leave the softmax's 16- and 8-lane loops and its scalar tail each something to do
 *  (SmolLM2's heads: 9 query heads, 3 KV heads of 64). */
export function attentionOutputs(cpu: CpuBackend): Float32Array[] {
  const [nH, nKV, hd] = [9, 3, 64], outs: Float32Array[] = [];
  for (const type of ["f32", "f16", "q8_0"] as KVType[])
    for (const nKeys of [13, 29, 300, 1000])
      for (const T of [1, 4]) {
        const rows = (seed: number) => {
          const bytes = new Uint8Array(nKeys * kvRowBytes(type, nKV * hd));
          cpu.kernels.storeKV(randn(nKeys * nKV * hd, seed), type, bytes, 0);
          return { type, bytes };
        };
        const out = new Float32Array(T * nH * hd);
        cpu.kernels.attention(randn(T * nH * hd, 60 + nKeys + T).map((x) => 3 * x), rows(70 + nKeys), rows(80 + nKeys), T, nKeys - T, nKeys, nH, nKV, hd,
          { scale: 1 / 8, softcap: 0, window: 0, causal: true }, out);
        outs.push(out);
      }
  return outs;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const cpu = loadCpuBackend();
  if ("error" in cpu) throw new Error(cpu.error);
  for (const threads of [1, 2]) {
    cpu.setThreads(threads);
    const outputs = matmulOutputs(cpu).map((o) => Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("base64"));
    const attention = attentionOutputs(cpu).map((o) => Buffer.from(o.buffer, o.byteOffset, o.byteLength).toString("base64"));
    process.stdout.write(JSON.stringify({ simd: cpu.info.simd, threads, outputs, attention }) + "\n");
  }
}
