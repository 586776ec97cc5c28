// Where a decode step's time goes, in place (every cache as cold as decode leaves it): the step
// as the forward runs it, against the same kernel calls with the same arguments (recorded from
// one step) replayed from a plain loop, without the forward's JavaScript; and against the
// matrix products alone. Rounds alternate the three inside one process and the ratios are paired
// by round, so the machine's drift cancels:
//   node scripts/decode-split.mjs MODEL.gguf [--threads 1] [--steps 100] [--rounds 7]
// Decode at depths 100–110 (the forward's cache is cut back to 100; the replay repeats the
// recorded step at depth 100).
import { loadModel } from "../dist/src/archs/index.js";
import { selectBackend } from "../dist/src/backends/index.js";
import { loadCpuBackend } from "../dist/src/backends/cpu/index.js";

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const path = process.argv[2];
if (!path || path.startsWith("--")) throw new Error("usage: node scripts/decode-split.mjs MODEL.gguf [--threads N] [--steps N] [--rounds N]");
const threads = Number(arg("--threads", "1")), steps = Number(arg("--steps", "100")), rounds = Number(arg("--rounds", "7"));
const cpu = loadCpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
const model = loadModel(path, selectBackend("cpu", { threads }), { cacheType: "f16" });
const cache = model.newCache(512);
const step = () => { model.forward(Int32Array.of(5), cache, "last"); if (cache.length > 110) cache.truncate(100); };
model.forward(new Int32Array(100).fill(7), cache, "last");
for (let i = 0; i < 300; i++) step(); // V8 compiles the forward

// One step's kernel calls, recorded as they run (cpu.kernels is the object every op calls through).
const k = cpu.kernels, calls = [], original = {};
for (const name of Object.keys(k)) if (typeof k[name] === "function") {
  const f = (original[name] = k[name]);
  k[name] = function (...a) { calls.push({ name, f, self: this, a }); return f.apply(this, a); };
}
cache.truncate(100);
step();
Object.assign(k, original);
cache.truncate(100);
const products = calls.filter((c) => c.name === "matmul" || c.name === "matmulMany");
const replay = (list) => () => { for (const c of list) c.f.apply(c.self, c.a); };
const variants = [["forward", step], ["kernels", replay(calls)], ["products", replay(products)]];

const ms = variants.map(() => []);
for (let r = 0; r < rounds; r++) {
  variants.forEach(([, run], v) => {
    for (let i = 0; i < 20; i++) run();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) run();
    ms[v].push((performance.now() - t0) / steps);
  });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const share = (v) => median(ms[v].map((x, i) => x / ms[0][i]));
console.log(`${path.split("/").pop()}, ${threads} thread(s): a step ${median(ms[0]).toFixed(3)} ms (${calls.length} kernel calls, ${products.length} of them products); ` +
  `its kernels alone ${(100 * share(1)).toFixed(1)}% of it, the products alone ${(100 * share(2)).toFixed(1)}% (medians of ${rounds} paired rounds)`);
process.exit(0);
