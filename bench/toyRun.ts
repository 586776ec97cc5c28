// One benchmark measurement of toy in its own process (so peak memory is its own):
//   node dist/bench/toyRun.js MODEL THREADS TEST [CACHE_TYPE] [BACKEND] [REPETITIONS]
// TEST is ppN or tgN[@D] (bench/tests.ts). As llama-bench does with its defaults: a warm-up,
// then REPETITIONS timed runs of the test (default 5, llama-bench's -r), each from the same
// starting cache; prints {"tps" (their mean, as llama-bench's avg_ts), "samples" (each run's
// t/s), "first_tps", "rss_mb", "cache_type"}. ppN is one forward of N tokens from an empty
// cache; tgN@D fills the cache with D tokens once (untimed, in forwards of 512 as llama-bench's
// micro-batches), then each run times N greedy decode steps, one token at a time through the KV
// cache, from depth D (the cache cut back to D, as llama-bench restores its state at D).
// The first run is where V8 is still compiling toy's forward (docs/performance.md): the mean
// includes it, and "first_tps" shows it alone.
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

const [path, threadsArg, testArg, cacheTypeArg, backendArg = "cpu", repetitionsArg = "5"] = process.argv.slice(2);
const repetitions = Number(repetitionsArg);
if (!(Number.isInteger(repetitions) && repetitions >= 1)) throw new Error(`toyRun: REPETITIONS must be a positive integer, got ${repetitionsArg}`);
const test = parseTest(testArg);
const onGpu = backendArg === "webgpu";
if (onGpu) await prepareBackend("webgpu");
const device = selectBackend(onGpu ? "webgpu" : "cpu", { threads: Number(threadsArg) });
// The KV cache in llama-bench's default type (F16) unless the bench asks for another.
const cacheType = (cacheTypeArg ?? "f16") as KVType; // loadModel checks it
const model = loadModel(path, device, { cacheType });
const newCache = (capacity: number) => model.newCache(capacity, { hugePages: true }); // as toy infer's (engines/generate.ts)

/** One forward (the prompt's last row of logits); on webgpu awaited until the adapter is done. */
async function forward(ids: Int32Array, cache: ReturnType<typeof newCache>): Promise<void> {
  if (model.forwardAsync) await model.forwardAsync(ids, cache, "last");
  else model.forward(ids, cache, "last");
}
/** One greedy decode step: the next token id (the step's logits in one array for all steps, as
 *  toy infer's generation keeps them: engines/generate.ts). */
const stepLogits = new Float32Array(model.nVocab);
async function greedy(token: number, cache: ReturnType<typeof newCache>): Promise<number> {
  if (model.greedyAsync) return model.greedyAsync(Int32Array.of(token), cache);
  return argmax(model.forward(Int32Array.of(token), cache, "last", stepLogits).data);
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

const samples: number[] = [];
if (test.kind === "pp") {
  const prompt = benchTokens(test.n, model.nVocab);
  const cache = promptCache!;
  for (let r = 0; r < repetitions; r++) {
    cache.truncate(0);
    const t0 = performance.now();
    await forward(prompt, cache);
    samples.push(test.n / ((performance.now() - t0) / 1000));
  }
} else {
  const cache = newCache(test.depth + test.n + 1);
  const fill = benchTokens(test.depth, model.nVocab);
  const fillCache = async () => {
    cache.truncate(0);
    for (let p = 0; p < test.depth; p += 512) await forward(fill.subarray(p, Math.min(test.depth, p + 512)), cache);
  };
  await fillCache();
  for (let r = 0; r < repetitions; r++) {
    // Back to depth D; a sliding-window layer that dropped keys the cut needs makes truncate
    // start over, and the cache is filled again (untimed).
    if (cache.truncate(test.depth) !== test.depth) await fillCache();
    let token = 1;
    const t0 = performance.now();
    for (let i = 0; i < test.n; i++) token = await greedy(token, cache);
    samples.push(test.n / ((performance.now() - t0) / 1000));
  }
}
const adapter = onGpu ? webgpuRuntime().report?.name : undefined;
const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
process.stdout.write(JSON.stringify({ tps: mean, samples, first_tps: samples[0], rss_mb: process.resourceUsage().maxRSS / 1024, cache_type: cacheType, ...(adapter ? { adapter } : {}) }) + "\n");
