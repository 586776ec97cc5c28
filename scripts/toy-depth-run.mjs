// CPU and wall time of toy's decode steps over a KV cache that already holds DEPTH tokens
// (bench/toyRun.js's tgN@D method), for kernel work on a busy machine:
//   node scripts/toy-depth-run.mjs MODEL THREADS DEPTH TG [CACHE_TYPE]
// → {"fill_s", "tg_cpu_ms_per_tok", "tg_wall_tps"}. With TOY_PERF_FIFO=path (a fifo given to
// `perf record -D -1 --control fifo:path`), profiling is enabled for the decode steps only.
import { writeFileSync } from "node:fs";
import { loadModel } from "../dist/src/archs/index.js";
import { selectBackend } from "../dist/src/backends/index.js";
import { argmax } from "../dist/src/engines/sampling.js";
import { benchTokens } from "../dist/bench/tests.js";

const [path, threadsArg, depthArg, tgArg, cacheType = "f16"] = process.argv.slice(2);
const threads = Number(threadsArg), depth = Number(depthArg), tg = Number(tgArg);
const model = loadModel(path, selectBackend("cpu", { threads }), { cacheType });
model.forward(benchTokens(8, model.nVocab), model.newCache(16), "last");
const cache = model.newCache(depth + tg + 1);
const fill = benchTokens(depth, model.nVocab);
let w0 = performance.now();
for (let p = 0; p < depth; p += 512) model.forward(fill.subarray(p, Math.min(depth, p + 512)), cache, "last");
const fillS = (performance.now() - w0) / 1000;
const fifo = process.env.TOY_PERF_FIFO;
if (fifo) writeFileSync(fifo, "enable\n");
let token = 1;
const c0 = process.cpuUsage();
w0 = performance.now();
for (let i = 0; i < tg; i++) token = argmax(model.forward(Int32Array.of(token), cache, "last").data);
const c = process.cpuUsage(c0), wall = performance.now() - w0;
if (fifo) writeFileSync(fifo, "disable\n");
console.log(JSON.stringify({ fill_s: +fillS.toFixed(2), tg_cpu_ms_per_tok: +((c.user + c.system) / 1000 / tg).toFixed(3), tg_wall_tps: +(tg / wall * 1000).toFixed(1) }));
