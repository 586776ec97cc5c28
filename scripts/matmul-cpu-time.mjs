// Per-kernel CPU time of the cpu backend's matmul on SmolLM2-135M's shapes, for kernel work:
//   node scripts/matmul-cpu-time.mjs [--threads N] [--T 1,128] [--types Q4_0,Q8_0]
// Prints µs of process CPU time per call (median of repeats) per type, shape and T.
import { loadCpuBackend } from "../dist/src/backends/cpu/index.js";
import { MATMUL_TYPES, makeWeight, randn } from "../dist/src/backends/cpu/selftest.js";
import { typeName } from "../dist/src/io/gguf/types.js";

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const threads = Number(arg("--threads", "1"));
const Ts = arg("--T", "1,128").split(",").map(Number);
const want = arg("--types", "");
const cpu = loadCpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
cpu.setThreads(threads);
const shapes = [[576, 576], [1536, 576], [576, 1536], [192, 576]];
const types = MATMUL_TYPES.filter((t) => !want || want.split(",").includes(typeName(t)));
console.log(`simd ${cpu.info.simd}, ${threads} thread(s); µs CPU per call; shapes ${shapes.map((s) => s.join("x")).join(" ")}, sum`);
for (const type of types) {
  // K-quants need whole 256-value blocks: SmolLM2's down projection, and a 512-column stand-in.
  const kq = [10, 11, 12, 13, 14].includes(type);
  const ws = (kq ? [[576, 1536], [1536, 512]] : shapes).map(([r, c]) => makeWeight(type, r, c, 1 + r));
  const cells = [];
  for (const T of Ts) {
    let total = 0;
    const per = [];
    for (const w of ws) {
      const x = randn(T * w.cols, 5), out = new Float32Array(T * w.rows);
      const reps = Math.max(3, Math.round(3e6 / (T * w.rows * w.cols)));
      const samples = [];
      for (let k = 0; k < 5; k++) {
        const c0 = process.cpuUsage();
        for (let i = 0; i < reps; i++) cpu.kernels.matmul(x, w, T, out);
        const c = process.cpuUsage(c0);
        samples.push((c.user + c.system) / reps);
      }
      samples.sort((a, b) => a - b);
      per.push(samples[2]);
      total += samples[2];
    }
    cells.push(`T=${T}: ${per.map((v) => v.toFixed(0)).join(" ")} = ${total.toFixed(0)}${T > 1 ? ` (${(total / T).toFixed(1)}/row)` : ""}`);
  }
  console.log(`${typeName(type).padEnd(5)} ${cells.join(" | ")}`);
}
