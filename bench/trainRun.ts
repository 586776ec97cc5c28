// The training row of the benchmark, in its own process:
//   node dist/bench/trainRun.js THREADS
// prints {"model", "params", "tokens_per_s", "flops", "peak_flops", "sustained_flops", "fraction",
// "fraction_of_best", "fraction_cpu", "fractions"}: AdamW steps of a fixed llama shape (from scratch, byte
// vocabulary) on the cpu backend, achieved FLOP/s counted as 6 · parameters · tokens / s
// (forward 2, backward 4), next to the machine's measured matrix-multiply peak: the float32 GEMM
// rate of the same native kernel on 1024³ products (C = A B and C = A Bᵀ, alternating).
//
// The machine is shared, so the two are interleaved: before every step the GEMM runs for as long
// as the previous step took, and the step is compared with that window. `fraction` is the step's
// rate over the window's sustained rate (all its products' FLOPs over its time: both met the
// same load); `fraction_of_best` is over the window's best single product (a product takes
// ~10 ms, so on a loaded machine it catches the moments the cores were free, which a step of a
// second cannot); `fraction_cpu` compares FLOPs per second of the process's CPU time (user +
// system, all threads) instead of wall time: what another process's load takes away counts in
// neither, time our threads spend waiting for each other counts in both. Reported: medians over
// the steps.

import { cpuBackend, selectBackend } from "../src/backends/index.js";
import { fromScratch, scratchConfig } from "../src/recipes/fromScratch.js";
import { Rng } from "../src/data/rng.js";

const threads = Number(process.argv[2] ?? "2");
selectBackend("cpu", { threads });
const cpu = cpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
const { addon } = cpu;

const n = 1024, a = new Float32Array(n * n).map((_, i) => Math.sin(i)), b = a.slice().reverse(), c = new Float32Array(n * n);
/** Seconds of CPU time the process has used (all threads). */
const cpuSeconds = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

/** 1024³ products for `ms` (at least four): the best single rate, the sustained one, and per CPU second. */
function peak(ms: number): { best: number; sustained: number; perCpu: number } {
  let best = 0, flops = 0;
  const start = performance.now(), cpu0 = cpuSeconds();
  for (let r = 0; r < 4 || performance.now() - start < ms; r++) {
    const t0 = performance.now();
    addon.gemm(a, n, 0, b, n, r % 2, c, n, n, n, n, 0);
    best = Math.max(best, (2 * n ** 3) / ((performance.now() - t0) / 1000));
    flops += 2 * n ** 3;
  }
  return { best, sustained: flops / ((performance.now() - start) / 1000), perCpu: flops / (cpuSeconds() - cpu0) };
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
let t0 = performance.now();
run.step(batch()); // warm-up
let stepMs = performance.now() - t0;
const tps: number[] = [], best: number[] = [], sustained: number[] = [], fractions: number[] = [], ofBest: number[] = [], ofCpu: number[] = [];
for (let s = 0; s < STEPS; s++) {
  const p = peak(stepMs), next = batch();
  t0 = performance.now();
  const cpu0 = cpuSeconds();
  run.step(next);
  stepMs = performance.now() - t0;
  ofCpu.push((6 * nParams * B * T) / (cpuSeconds() - cpu0) / p.perCpu);
  const rate = (B * T) / (stepMs / 1000);
  tps.push(rate); best.push(p.best); sustained.push(p.sustained);
  fractions.push((6 * nParams * rate) / p.sustained); ofBest.push((6 * nParams * rate) / p.best);
}
const median = (x: number[]) => x.slice().sort((u, v) => u - v)[(x.length - 1) >> 1];
process.stdout.write(JSON.stringify({
  model: `llama d${shape.nEmbd} × ${shape.nLayer} layers, ffn ${shape.nFF}, batch ${B}×${T}`, params: nParams,
  tokens_per_s: median(tps), flops: 6 * nParams * median(tps), peak_flops: median(best), sustained_flops: median(sustained),
  fraction: median(fractions), fraction_of_best: median(ofBest), fraction_cpu: median(ofCpu), fractions,
}) + "\n");
