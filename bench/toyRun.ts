// One benchmark measurement of toy in its own process (so peak memory is its own):
//   node dist/bench/toyRun.js MODEL THREADS PROMPT_TOKENS GEN_TOKENS
// prints {"pp_tps", "tg_tps", "rss_mb"}: prompt processing from an empty cache, then greedy
// generation one token at a time through the KV cache, as llama-bench's pp and tg tests do.

import { loadModel } from "../src/archs/index.js";
import { selectBackend } from "../src/backends/index.js";
import { argmax } from "../src/engines/sampling.js";

const [path, threadsArg, ppArg, tgArg, backendArg] = process.argv.slice(2);
const threads = Number(threadsArg), pp = Number(ppArg), tg = Number(tgArg);
const device = selectBackend(backendArg ?? "cpu", { threads });
const model = loadModel(path, device, { cacheType: "f16" }); // llama-bench's default KV cache type
const prompt = Int32Array.from({ length: pp }, (_, i) => 300 + ((i * 7919) % 20000));

// Warm-up: touch every weight page once (llama-bench also runs a warm-up).
model.forward(prompt.subarray(0, 8), model.newCache(pp + tg + 8), "last");

let cache = model.newCache(pp + tg);
let t0 = performance.now();
model.forward(prompt, cache, "last");
const ppMs = performance.now() - t0;

cache = model.newCache(tg + 1);
let token = 1;
t0 = performance.now();
for (let i = 0; i < tg; i++) token = argmax(model.forward(Int32Array.of(token), cache, "last").data);
const tgMs = performance.now() - t0;

process.stdout.write(JSON.stringify({ pp_tps: pp / (ppMs / 1000), tg_tps: tg / (tgMs / 1000), rss_mb: process.resourceUsage().maxRSS / 1024 }) + "\n");
