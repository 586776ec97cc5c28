// The training row of the benchmark, in its own process:
//   node dist/bench/trainRun.js THREADS
// prints {"model", "params", "tokens_per_s", "flops", "peak_flops", "fraction", "fractions"}:
// AdamW steps of a fixed llama shape (from scratch, byte vocabulary) on the cpu backend,
// achieved FLOP/s counted as 6 · parameters · tokens / s (forward 2, backward 4), next to the
// machine's measured matrix-multiply peak: the best float32 GEMM rate of the same native kernel
// on 1024³ products (C = A B and C = A Bᵀ).
//
// The machine is shared, so the two are interleaved: before every step the peak is measured
// afresh (the best of the products run in PEAK_MS), and that step's fraction is its own rate
// over that peak. Reported: medians over the steps (tokens/s, peak, fraction).

import { cpuBackend, selectBackend } from "../src/backends/index.js";
import { fromScratch, scratchConfig } from "../src/recipes/fromScratch.js";
import { Rng } from "../src/engines/rng.js";

const threads = Number(process.argv[2] ?? "2");
selectBackend("cpu", { threads });
const cpu = cpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
const { addon } = cpu;

const n = 1024, a = new Float32Array(n * n).map((_, i) => Math.sin(i)), b = a.slice().reverse(), c = new Float32Array(n * n);
const PEAK_MS = 300;
/** The best GEMM rate over PEAK_MS of 1024³ products, alternating B and Bᵀ. */
function peak(): number {
  let best = 0;
  for (let r = 0, t1 = performance.now() + PEAK_MS; r < 4 || performance.now() < t1; r++) {
    const t0 = performance.now();
    addon.gemm(a, n, 0, b, n, r % 2, c, n, n, n, n, 0);
    best = Math.max(best, (2 * n ** 3) / ((performance.now() - t0) / 1000));
  }
  return best;
}

const shape = { nEmbd: 512, nLayer: 4, nHead: 8, nKVHead: 8, nFF: 1536, contextLength: 256 };
const B = 4, T = 256, STEPS = 5;
const run = fromScratch.realize(scratchConfig(shape), { backend: "cpu", steps: 100, lr: 1e-3, warmup: 0, seed: 0 });
const nParams = [...run.params.values.values()].reduce((s, v) => s + v.length, 0);
const rng = new Rng(1);
const batch = () => {
  const input = Int32Array.from({ length: B * T }, () => 3 + Math.floor(rng.next() * 256));
  const target = Int32Array.from({ length: B * T }, () => 3 + Math.floor(rng.next() * 256));
  return { input, target, batch: B, seq: T };
};
run.step(batch()); // warm-up
const tps: number[] = [], peaks: number[] = [], fractions: number[] = [];
for (let s = 0; s < STEPS; s++) {
  const p = peak(), next = batch();
  const t0 = performance.now();
  run.step(next);
  const rate = (B * T) / ((performance.now() - t0) / 1000);
  tps.push(rate); peaks.push(p); fractions.push((6 * nParams * rate) / p);
}
const median = (x: number[]) => x.slice().sort((u, v) => u - v)[(x.length - 1) >> 1];
process.stdout.write(JSON.stringify({
  model: `llama d${shape.nEmbd} × ${shape.nLayer} layers, ffn ${shape.nFF}, batch ${B}×${T}`, params: nParams,
  tokens_per_s: median(tps), flops: 6 * nParams * median(tps), peak_flops: median(peaks), fraction: median(fractions), fractions,
}) + "\n");
