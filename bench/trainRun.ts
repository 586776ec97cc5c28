// The training row of the benchmark, in its own process:
//   node dist/bench/trainRun.js THREADS
// prints {"model", "params", "tokens_per_s", "flops", "peak_flops", "fraction"}: AdamW steps of a
// fixed llama shape (from scratch, byte vocabulary) on the cpu backend, achieved FLOP/s counted
// as 6 · parameters · tokens / s (forward 2, backward 4), next to the machine's measured
// matrix-multiply peak: the best float32 GEMM rate of the same native kernel on 1024³ products.

import { cpuBackend, selectBackend } from "../src/backends/index.js";
import { fromScratch, scratchConfig } from "../src/recipes/fromScratch.js";
import { Rng } from "../src/engines/rng.js";

const threads = Number(process.argv[2] ?? "2");
selectBackend("cpu", { threads });
const cpu = cpuBackend();
if ("error" in cpu) throw new Error(cpu.error);

// Peak: C = A Bᵀ and C = A B on 1024 × 1024 × 1024, best of five.
const n = 1024, a = new Float32Array(n * n).map((_, i) => Math.sin(i)), b = a.slice().reverse(), c = new Float32Array(n * n);
let peak = 0;
for (let r = 0; r < 5; r++) for (const transB of [0, 1]) {
  const t0 = performance.now();
  cpu.addon.gemm(a, n, 0, b, n, transB, c, n, n, n, n, 0);
  peak = Math.max(peak, (2 * n ** 3) / ((performance.now() - t0) / 1000));
}

const shape = { nEmbd: 512, nLayer: 4, nHead: 8, nKVHead: 8, nFF: 1536, contextLength: 256 };
const B = 4, T = 256;
const run = fromScratch.realize(scratchConfig(shape), { backend: "cpu", steps: 100, lr: 1e-3, warmup: 0, seed: 0 });
const nParams = [...run.params.values.values()].reduce((s, v) => s + v.length, 0);
const rng = new Rng(1);
const batch = () => {
  const input = Int32Array.from({ length: B * T }, () => 3 + Math.floor(rng.next() * 256));
  const target = Int32Array.from({ length: B * T }, () => 3 + Math.floor(rng.next() * 256));
  return { input, target, batch: B, seq: T };
};
run.step(batch()); // warm-up
const steps = 3, t0 = performance.now();
for (let s = 0; s < steps; s++) run.step(batch());
const tps = (steps * B * T) / ((performance.now() - t0) / 1000);
const flops = 6 * nParams * tps;
process.stdout.write(JSON.stringify({
  model: `llama d${shape.nEmbd} × ${shape.nLayer} layers, ffn ${shape.nFF}, batch ${B}×${T}`, params: nParams,
  tokens_per_s: tps, flops, peak_flops: peak, fraction: flops / peak,
}) + "\n");
