// One benchmark measurement of toy in its own process (so peak memory is its own):
//   node dist/bench/toyRun.js MODEL THREADS TEST [CACHE_TYPE] [BACKEND]
// TEST is ppN or tgN[@D] (bench/tests.ts). Prints {"tps", "rss_mb", "cache_type"}: ppN is one
// forward of N tokens from an empty cache; tgN@D first fills the cache with D tokens (untimed,
// in forwards of 512 as llama-bench's micro-batches), then times N greedy decode steps, one token
// at a time through the KV cache, as llama-bench's tests do.
// CACHE_TYPE (f32, f16, q8_0; default f16 as llama.cpp) is passed to the model's newCache where
// toy has KV-cache types; without them the cache is float32 and "cache_type" says so.
// BACKEND is cpu (default; THREADS worker threads) or webgpu (the whole forward on the adapter,
// one submission per forward; decode reads back only the greedy token id; THREADS is unused).

import { loadModel } from "../src/archs/index.js";
import { prepareBackend, selectBackend, webgpuRuntime } from "../src/backends/index.js";
import { argmax } from "../src/engines/sampling.js";
import type { KVType } from "../src/blocks/kvCacheTypes.js";
import { keepYoungGenerationSmall } from "../src/cli/youngGeneration.js";
import { benchTokens, parseTest } from "./tests.js";

keepYoungGenerationSmall(); // as `toy infer` does

const [path, threadsArg, testArg, cacheTypeArg, backendArg = "cpu"] = process.argv.slice(2);
const test = parseTest(testArg);
const onGpu = backendArg === "webgpu";
if (onGpu) await prepareBackend("webgpu");
const device = selectBackend(onGpu ? "webgpu" : "cpu", { threads: Number(threadsArg) });
// The KV cache in llama-bench's default type (F16) unless the bench asks for another.
const cacheType = (cacheTypeArg ?? "f16") as KVType; // loadModel checks it
const model = loadModel(path, device, { cacheType });
const newCache = (capacity: number) => model.newCache(capacity);

/** One forward (the prompt's last row of logits); on webgpu awaited until the adapter is done. */
async function forward(ids: Int32Array, cache: ReturnType<typeof newCache>): Promise<void> {
  if (model.forwardAsync) await model.forwardAsync(ids, cache, "last");
  else model.forward(ids, cache, "last");
}
/** One greedy decode step: the next token id. */
async function greedy(token: number, cache: ReturnType<typeof newCache>): Promise<number> {
  if (model.greedyAsync) return model.greedyAsync(Int32Array.of(token), cache);
  return argmax(model.forward(Int32Array.of(token), cache, "last").data);
}

// Warm-up as llama-bench's: the whole prompt once for a prompt test, one decode step for a
// generation test (after a short forward that touches every weight page). On webgpu this also
// uploads the weights and compiles the pipelines. A prompt test then reads the prompt again into
// the same cache, emptied, as llama-bench clears its context's cache between runs.
const promptCache = test.kind === "pp" ? newCache(test.n) : null;
if (promptCache) await forward(benchTokens(test.n, model.nVocab), promptCache);
else {
  const cache = newCache(16);
  await forward(benchTokens(8, model.nVocab), cache);
  await greedy(1, cache);
}

let seconds: number;
if (test.kind === "pp") {
  const prompt = benchTokens(test.n, model.nVocab);
  const cache = promptCache!;
  cache.truncate(0);
  const t0 = performance.now();
  await forward(prompt, cache);
  seconds = (performance.now() - t0) / 1000;
} else {
  const cache = newCache(test.depth + test.n + 1);
  const fill = benchTokens(test.depth, model.nVocab);
  for (let p = 0; p < test.depth; p += 512) await forward(fill.subarray(p, Math.min(test.depth, p + 512)), cache);
  let token = 1;
  const t0 = performance.now();
  for (let i = 0; i < test.n; i++) token = await greedy(token, cache);
  seconds = (performance.now() - t0) / 1000;
}
const adapter = onGpu ? webgpuRuntime().report?.name : undefined;
process.stdout.write(JSON.stringify({ tps: test.n / seconds, rss_mb: process.resourceUsage().maxRSS / 1024, cache_type: cacheType, ...(adapter ? { adapter } : {}) }) + "\n");
