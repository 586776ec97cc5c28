// Where memory bandwidth binds decode: for each storage type, the rate (weight bytes per second)
// at which toy's decode product (one activation row, one thread) reads a weight that sits in the
// L2 cache, next to the rate for weights that come from memory (a cycle of ~300 MB of copies, far
// past the last-level cache). Where the in-cache rate is well above the memory's, the product
// waits on memory and the bandwidth bound is the one that binds; where the two are close, the
// kernel's arithmetic (unpacking quantized blocks) binds, and the bound overstates what any
// kernel of that type reaches. The weights are made as a model's are: mapped from a file and
// repacked (native/addon.c js_repack), so they lie on huge pages as in decode.
//   node dist/bench/kernelRates.js   prints the rates as JSON (the bench runs it in a process of
//   its own: the ~300 MB of copies per type stay out of the bench's memory, and of the peak
//   memory it reads from each child it starts).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadCpuBackend } from "../src/backends/cpu/index.js";
import type { CpuBackend } from "../src/backends/cpu/index.js";
import { GGMLType, typeName } from "../src/io/gguf/types.js";
import { quantize } from "../src/quant/index.js";

export interface KernelRate { type: string; in_cache_gbs: number; from_memory_gbs: number }

/** "memory" where the type's decode product reads ≥ 1.5× faster from cache than from memory, else "compute". */
export const binds = (r: KernelRate): "memory" | "compute" => (r.in_cache_gbs >= 1.5 * r.from_memory_gbs ? "memory" : "compute");

/** The storage types of the bench's models: mostly Q5_0 in the Q4_K_M file, Q5_1 in the Q5_K_M one, Q8_0 in the Q6_K one (rows of 576 values are not whole 256-value blocks, so llama-quantize falls back to them). */
const TYPES = [GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q5_0, GGMLType.Q5_1, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K];

/** One thread, SmolLM2-135M's down projection (576 × 1536): 0.5–3.5 MB, within the 2 MB L2 for all but F32. */
export function decodeKernelRates(cpu: CpuBackend, streamBytes = 300e6): KernelRate[] {
  const rows = 576, cols = 1536;
  const threads = cpu.addon.info().threads;
  cpu.addon.setThreads(1);
  const dir = mkdtempSync(join(tmpdir(), "toy-rates-"));
  try {
    const values = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 0.37));
    const x = new Float32Array(cols).fill(0.01), out = new Float32Array(rows);
    return TYPES.map((type) => {
      const path = join(dir, `${typeName(type)}.bin`);
      writeFileSync(path, quantize(type, values, rows, cols));
      // A fresh mapping each time; repack copies it (and drops its pages), so copies never share
      // memory. A type without a repacked layout on this CPU reads heap copies of the file's bytes.
      const copy = () => { const m = cpu.mapFile(path); return cpu.addon.repack(m, type, rows, cols) ?? m.slice(); };
      const first = cpu.addon.repack(cpu.mapFile(path), type, rows, cols);
      const product = first
        ? (w: Uint8Array) => cpu.addon.matmulPacked(x, w, type, rows, cols, 1, out)
        : (w: Uint8Array) => cpu.addon.matmul(x, w, type, rows, cols, 1, out);
      const seconds = (fn: () => void, n: number) => { const t0 = performance.now(); for (let i = 0; i < n; i++) fn(); return (performance.now() - t0) / 1e3 / n; };
      const hot = first ?? copy();
      for (let i = 0; i < 50; i++) product(hot);
      const inCache = hot.length / seconds(() => product(hot), 2000);
      const copies = Array.from({ length: Math.ceil(streamBytes / hot.length) }, copy);
      const cycle = () => { for (const w of copies) product(w); };
      cycle();
      const fromMemory = hot.length * copies.length / seconds(cycle, 3);
      return { type: typeName(type), in_cache_gbs: +(inCache / 1e9).toFixed(1), from_memory_gbs: +(fromMemory / 1e9).toFixed(1) };
    });
  } finally {
    cpu.addon.setThreads(threads);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cpu = loadCpuBackend();
  if ("error" in cpu) { console.error(`kernelRates: the cpu backend is not built: ${cpu.error}`); process.exit(4); }
  process.stdout.write(JSON.stringify(decodeKernelRates(cpu)) + "\n");
}
