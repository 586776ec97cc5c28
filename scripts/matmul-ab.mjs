// Two (or more) builds of the native addon, loaded side by side in one process, timed on the same
// matrix products in alternating order: the paired comparison for kernel work, where separate
// processes of one build differ by more than most kernel changes (docs/performance.md).
//   cp build/Release/toy_native.node /tmp/a.node   # then change native/, npm run build:native
//   node scripts/matmul-ab.mjs /tmp/a.node build/Release/toy_native.node [--types Q4_0,BF16] [--T 1,128,512] [--threads 1] [--rounds 9]
//     [--shapes 576x576,1536x576] (rows × cols; default SmolLM2-135M's four product shapes)
// Prints per type and T the median µs per activation row over SmolLM2-135M's four product shapes
// (repacked as a model's weights are; F32 weights are repacked only from a mapped file, so F32
// here is the file layout), and each build's median ratio of paired rounds to the first build's.
import { copyFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeWeight, randn } from "../dist/src/backends/cpu/selftest.js";
import { typeByName } from "../dist/src/io/gguf/types.js";

const args = process.argv.slice(2);
const arg = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args.splice(i, 2)[1] : d; };
const types = arg("--types", "Q4_0,Q8_0,Q4_K,F16,BF16").split(",");
const Ts = arg("--T", "128,512").split(",").map(Number);
const threads = Number(arg("--threads", "1")), rounds = Number(arg("--rounds", "9"));
const shapes = arg("--shapes", "576x576,1536x576,576x1536,192x576").split(",").map((s) => s.split("x").map(Number)); // rows × cols
if (args.length < 2) throw new Error("usage: node scripts/matmul-ab.mjs A.node B.node [more.node] [--types ...] [--T ...] [--threads N] [--rounds N]");
const require = createRequire(import.meta.url);
// A copy per build: the loader keys addons by path, and a rebuilt file must not replace a loaded one.
const addons = args.map((path, i) => {
  const copy = join(tmpdir(), `toy-ab-${process.pid}-${i}.node`);
  copyFileSync(path, copy);
  const addon = require(copy);
  rmSync(copy);
  addon.setThreads(threads);
  return addon;
});
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
for (const name of types) {
  const type = typeByName(name);
  if (type === undefined) throw new Error(`unknown type ${name}`);
  const kq = ["Q4_K", "Q5_K", "Q6_K"].includes(name); // whole 256-value blocks
  const ws = (kq ? [[576, 1536], [1536, 512]] : shapes).map(([r, c]) => makeWeight(type, r, c, 1 + r));
  const packed = addons.map((a) => ws.map((w) => a.repack(w.bytes, w.type, w.rows, w.cols) ?? null));
  for (const T of Ts) {
    const xs = ws.map((w) => randn(T * w.cols, 5)), outs = ws.map((w) => new Float32Array(T * w.rows));
    const once = (k) => {
      const a = addons[k], t0 = performance.now();
      for (let rep = 0; rep < 3; rep++)
        ws.forEach((w, i) => {
          const p = packed[k][i];
          if (p) a.matmulPacked(xs[i], p, w.type, w.rows, w.cols, T, outs[i]);
          else a.matmul(xs[i], w.bytes, w.type, w.rows, w.cols, T, outs[i]);
        });
      return (performance.now() - t0) / 3;
    };
    addons.forEach((_, k) => once(k)); // warm-up
    const times = addons.map(() => []);
    for (let r = 0; r < rounds; r++) {
      const order = addons.map((_, k) => k);
      if (r % 2) order.reverse();
      for (const k of order) times[k].push(once(k));
    }
    const cells = args.map((path, k) => {
      const ratio = median(times[k].map((t, r) => t / times[0][r]));
      return `${path.split("/").pop()} ${(median(times[k]) * 1000 / T).toFixed(1)} µs/row ×${ratio.toFixed(3)}`;
    });
    console.log(`${name} T=${T}, ${threads} thread(s): ${cells.join("  |  ")}`);
  }
}
