// One benchmark measurement of node-llama-cpp (llama.cpp's npm binding) in its own process:
//   node dist/bench/peerRun.js PEER_DIR MODEL THREADS PROMPT_TOKENS GEN_TOKENS
// The peer is installed by the benchmark into PEER_DIR (never a dependency of toy).

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [peerDir, path, threadsArg, ppArg, tgArg] = process.argv.slice(2);
const threads = Number(threadsArg), pp = Number(ppArg), tg = Number(tgArg);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const nlc: any = await import(pathToFileURL(join(peerDir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
const llama = await nlc.getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: true });
const prompt = Array.from({ length: pp }, (_, i) => 300 + ((i * 7919) % 20000));

const ctx = await model.createContext({ contextSize: pp + tg + 16, batchSize: pp, threads, flashAttention: false });
let seq = ctx.getSequence();
await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, 8)); // warm-up
await seq.clearHistory();
let t0 = performance.now();
await seq.evaluateWithoutGeneratingNewTokens(prompt);
const ppMs = performance.now() - t0;
await seq.clearHistory();

let n = 0;
t0 = performance.now();
for await (const _token of seq.evaluate([1], { temperature: 0 })) {
  if (++n >= tg) break;
}
const tgMs = performance.now() - t0;
process.stdout.write(JSON.stringify({ pp_tps: pp / (ppMs / 1000), tg_tps: tg / (tgMs / 1000), rss_mb: process.resourceUsage().maxRSS / 1024 }) + "\n");
process.exit(0);
