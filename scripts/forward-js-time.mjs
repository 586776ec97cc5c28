// How much of a decode step is the forward's JavaScript: ms per step with the cpu backend's
// kernels as they are, and with every kernel replaced by a no-op (what is left is the forward's
// own JavaScript: the blocks, the workspace, the weight lookups; not the kernels' Node-API
// argument handling, which the no-ops skip):
//   node scripts/forward-js-time.mjs MODEL.gguf [--steps 1000] [--threads 1]
// Decode steps at depths 50–200 (the cache is cut back to 50 when it reaches 200).
import { loadModel } from "../dist/src/archs/index.js";
import { selectBackend } from "../dist/src/backends/index.js";
import { loadCpuBackend } from "../dist/src/backends/cpu/index.js";

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const path = process.argv[2];
if (!path || path.startsWith("--")) throw new Error("usage: node scripts/forward-js-time.mjs MODEL.gguf [--steps N] [--threads N]");
const steps = Number(arg("--steps", "1000"));
const cpu = loadCpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
const model = loadModel(path, selectBackend("cpu", { threads: Number(arg("--threads", "1")) }), { cacheType: "f16" });
const cache = model.newCache(256);
model.forward(Int32Array.of(1, 2, 3), cache, "last"); // weights repacked, caches made

const msPerStep = () => {
  const step = () => { model.forward(Int32Array.of(5), cache, "last"); if (cache.length >= 200) cache.truncate(50); };
  for (let i = 0; i < 300; i++) step(); // V8 compiles the forward
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  return (performance.now() - t0) / steps;
};
const real = msPerStep();
const k = cpu.kernels;
for (const name of Object.keys(k)) if (typeof k[name] === "function") k[name] = () => true; // (matmulMany: "done")
const noop = msPerStep();
console.log(`${path.split("/").pop()}: ${real.toFixed(3)} ms a decode step, ${noop.toFixed(3)} ms of it the forward's JavaScript (kernels as no-ops)`);
