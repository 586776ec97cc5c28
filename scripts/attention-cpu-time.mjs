// CPU time of the cpu backend's inference attention on SmolLM2-135M's shapes (9 query heads,
// 3 KV heads, head 64), for kernel work:
//   node scripts/attention-cpu-time.mjs [--threads N] [--depths 1024,4096] [--T 1] [--types f16,q8_0,f32] [--layers 30] [--pages huge|4k]
// Prints µs of process CPU time and of wall time per call (medians of 7) per cache type, depth and T.
// Calls cycle through `layers` caches (default 30, as SmolLM2's layers: the cache is read from
// memory, as in a decode step, not from the last-level cache; where that cache holds 30 of them,
// as the Intel Xeon's 300 MB does at depth 4096, pass --layers 120). --pages: the caches on
// transparent huge pages (default, as the engines' caches: newCache(n, { hugePages: true })) or
// on ordinary 4 KB pages.
import { loadCpuBackend } from "../dist/src/backends/cpu/index.js";
import { randn } from "../dist/src/backends/cpu/selftest.js";
import { quantize } from "../dist/src/quant/index.js";
import { GGMLType } from "../dist/src/io/gguf/types.js";

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const threads = Number(arg("--threads", "1"));
const depths = arg("--depths", "1024,4096").split(",").map(Number);
const Ts = arg("--T", "1").split(",").map(Number);
const types = arg("--types", "f16,q8_0,f32").split(",");
const layers = Number(arg("--layers", "30"));
const huge = arg("--pages", "huge") === "huge";
const cpu = loadCpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
cpu.setThreads(threads);
const nH = 9, nKV = 3, hd = 64;
const TYPE = { f32: GGMLType.F32, f16: GGMLType.F16, q8_0: GGMLType.Q8_0 };
const o = { scale: 1 / Math.sqrt(hd), softcap: 0, window: 0, causal: true };
console.log(`simd ${cpu.info.simd}, ${threads} thread(s); µs per call (CPU / wall), SmolLM2 shapes ${nH}/${nKV}x${hd}, ${layers} caches on ${huge ? "huge" : "4 KB"} pages`);
const copy = (b) => { const c = huge ? cpu.kernels.allocHugePages(b.length) : null; if (!c) return b.slice(); c.set(b); return c; };
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
for (const name of types) {
  const cells = [];
  for (const depth of depths) for (const T of Ts) {
    const nKeys = depth + T;
    const kf = randn(nKeys * nKV * hd, 1), vf = randn(nKeys * nKV * hd, 2);
    const k1 = quantize(TYPE[name], kf, nKeys, nKV * hd), v1 = quantize(TYPE[name], vf, nKeys, nKV * hd);
    const ks = Array.from({ length: layers }, () => ({ type: name, bytes: copy(k1) }));
    const vs = Array.from({ length: layers }, () => ({ type: name, bytes: copy(v1) }));
    const q = randn(T * nH * hd, 3), out = new Float32Array(T * nH * hd);
    const reps = layers * Math.max(1, Math.round(2e7 / (T * nKeys * nH * hd * layers)));
    const cpuS = [], wallS = [];
    for (let s = 0; s < 7; s++) {
      const c0 = process.cpuUsage(), w0 = performance.now();
      for (let i = 0; i < reps; i++) cpu.kernels.attention(q, ks[i % layers], vs[i % layers], T, depth, nKeys, nH, nKV, hd, o, out);
      const c = process.cpuUsage(c0);
      wallS.push((performance.now() - w0) * 1000 / reps);
      cpuS.push((c.user + c.system) / reps);
    }
    cells.push(`d${depth} T${T}: ${median(cpuS).toFixed(0)} / ${median(wallS).toFixed(0)}`);
  }
  console.log(`${name.padEnd(5)} ${cells.join("   ")}`);
}
