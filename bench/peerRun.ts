// One benchmark measurement of node-llama-cpp (llama.cpp's npm binding) in its own process:
//   node dist/bench/peerRun.js PEER_DIR MODEL THREADS TEST
// TEST as in bench/toyRun.ts; prints {"tps", "rss_mb"}. The peer is installed by the benchmark
// into PEER_DIR (never a dependency of toy); its own defaults otherwise.

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { benchTokens, parseTest } from "./tests.js";

const [peerDir, path, threadsArg, testArg] = process.argv.slice(2);
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

let seconds: number;
if (test.kind === "pp") {
  const t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(Array.from(benchTokens(test.n, nVocab)));
  seconds = (performance.now() - t0) / 1000;
} else {
  if (test.depth > 0) await seq.evaluateWithoutGeneratingNewTokens(Array.from(benchTokens(test.depth, nVocab)));
  let n = 0;
  const t0 = performance.now();
  for await (const _token of seq.evaluate([1], { temperature: 0 })) {
    if (++n >= test.n) break;
  }
  seconds = (performance.now() - t0) / 1000;
}
process.stdout.write(JSON.stringify({ tps: test.n / seconds, rss_mb: process.resourceUsage().maxRSS / 1024 }) + "\n");
process.exit(0);
