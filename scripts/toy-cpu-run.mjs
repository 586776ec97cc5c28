// CPU time (not wall time) of toy's prompt and decode phases, for comparing kernels on a busy
// machine:  node scripts/toy-cpu-run.mjs MODEL THREADS PP TG  → {"pp_cpu_ms_per_tok", "tg_cpu_ms_per_tok"}
// (bench/toyRun.js's method: one warm-up forward, a prompt from an empty cache, greedy decode.)
import { loadModel } from "../dist/src/archs/index.js";
import { selectBackend } from "../dist/src/backends/index.js";
import { argmax } from "../dist/src/engines/sampling.js";

const [path, threadsArg, ppArg, tgArg] = process.argv.slice(2);
const threads = Number(threadsArg), pp = Number(ppArg), tg = Number(tgArg);
const model = loadModel(path, selectBackend("cpu", { threads }));
const prompt = Int32Array.from({ length: pp }, (_, i) => 300 + ((i * 7919) % 20000));
model.forward(prompt.subarray(0, 8), model.newCache(pp + tg + 8), "last");
const cpuMs = (c) => (c.user + c.system) / 1000;
let c0 = process.cpuUsage(), w0 = performance.now();
model.forward(prompt, model.newCache(pp + tg), "last");
const ppCpu = cpuMs(process.cpuUsage(c0)), ppWall = performance.now() - w0;
const cache = model.newCache(tg + 1);
let token = 1;
c0 = process.cpuUsage(); w0 = performance.now();
for (let i = 0; i < tg; i++) token = argmax(model.forward(Int32Array.of(token), cache, "last").data);
const tgCpu = cpuMs(process.cpuUsage(c0)), tgWall = performance.now() - w0;
console.log(JSON.stringify({ pp_cpu_ms_per_tok: +(ppCpu / pp).toFixed(3), tg_cpu_ms_per_tok: +(tgCpu / tg).toFixed(3), pp_wall_tps: +(pp / ppWall * 1000).toFixed(1), tg_wall_tps: +(tg / tgWall * 1000).toFixed(1) }));
