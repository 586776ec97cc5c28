// One benchmark measurement of node-llama-cpp (llama.cpp's npm binding) in its own process:
//   node dist/bench/peerRun.js PEER_DIR MODEL THREADS TEST [REPETITIONS]
// TEST and REPETITIONS as in bench/toyRun.ts (each run starts from a cleared context, refilled to
// depth D untimed); prints {"tps" (the runs' mean t/s), "samples", "first_tps", "rss_mb"}. The peer is installed by the benchmark
// into PEER_DIR (never a dependency of toy); its own defaults otherwise.

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { benchTokens, parseTest } from "./tests.js";

const [peerDir, path, threadsArg, testArg, repetitionsArg = "5"] = process.argv.slice(2);
const repetitions = Math.max(1, Math.floor(Number(repetitionsArg)) || 1);
const threads = Number(threadsArg), test = parseTest(testArg);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const nlc: any = await import(pathToFileURL(join(peerDir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
const llama = await nlc.getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: true });
const nVocab = 49152; // benchTokens stays below 20300: any of the benchmark's vocabularies

const ctx = await model.createContext({ contextSize: test.depth + test.n + 16, batchSize: 512, threads });
const seq = ctx.getSequence();
await seq.evaluateWithoutGeneratingNewTokens(Array.from(benchTokens(8, nVocab))); // warm-up
await seq.clearHistory();

const samples: number[] = [];
for (let r = 0; r < repetitions; r++) {
  await seq.clearHistory();
  if (test.kind === "pp") {
    const t0 = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(Array.from(benchTokens(test.n, nVocab)));
    samples.push(test.n / ((performance.now() - t0) / 1000));
    continue;
  }
  if (test.depth > 0) await seq.evaluateWithoutGeneratingNewTokens(Array.from(benchTokens(test.depth, nVocab)));
  let n = 0;
  const t0 = performance.now();
  for await (const _token of seq.evaluate([1], { temperature: 0 })) {
    if (++n >= test.n) break;
  }
  samples.push(test.n / ((performance.now() - t0) / 1000));
}
const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
process.stdout.write(JSON.stringify({ tps: mean, samples, first_tps: samples[0], rss_mb: process.resourceUsage().maxRSS / 1024 }) + "\n");
process.exit(0);
