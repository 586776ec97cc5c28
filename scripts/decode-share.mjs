// Decode's share of its memory-bandwidth bound, round by round: each round decodes 64 tokens from
// a cache holding `depth` positions, with the streaming read bandwidth (the bench's, native
// bandwidth.c) measured right before and right after it in the same process, so that the bound
// (bandwidth ÷ bytes per token, bench/bounds.ts) sees the machine as the round did. Prints every
// round (its two readings show the 2-thread bandwidth's two modes) and the median share:
//   node scripts/decode-share.mjs MODEL.gguf [--threads 1] [--depth 0] [--rounds 5]
import { loadModel } from "../dist/src/archs/index.js";
import { selectBackend } from "../dist/src/backends/index.js";
import { loadCpuBackend } from "../dist/src/backends/cpu/index.js";
import { argmax } from "../dist/src/engines/sampling.js";
import { kvBytesPerToken, weightBytesPerToken } from "../dist/bench/bounds.js";

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const path = process.argv[2];
if (!path || path.startsWith("--")) throw new Error("usage: node scripts/decode-share.mjs MODEL.gguf [--threads N] [--depth N] [--rounds N]");
const threads = Number(arg("--threads", "1")), depth = Number(arg("--depth", "0")), rounds = Number(arg("--rounds", "5"));
const cpu = loadCpuBackend();
if ("error" in cpu) throw new Error(cpu.error);
const model = loadModel(path, selectBackend("cpu", { threads }), { cacheType: "f16" });
const cache = model.newCache(depth + 200, { hugePages: true });
const fill = new Int32Array(Math.max(depth, 8)).map((_, i) => 100 + ((i * 7) % 1000));
for (let p = 0; p < fill.length; p += 512) model.forward(fill.subarray(p, Math.min(fill.length, p + 512)), cache, "last");
let token = 1;
const logits = new Float32Array(model.nVocab); // one array for every step's logits, as a generation's
const step = () => { token = argmax(model.forward(Int32Array.of(token), cache, "last", logits).data); };
for (let i = 0; i < 100; i++) step(); // V8 compiles the forward
const bytes = weightBytesPerToken(path) + kvBytesPerToken(path, depth + 32); // the mean position of 64 steps
const shares = [];
for (let r = 0; r < rounds; r++) {
  cache.truncate(depth);
  const before = cpu.addon.readBandwidth(threads);
  const t0 = performance.now();
  for (let i = 0; i < 64; i++) step();
  const tps = 64000 / (performance.now() - t0);
  const after = cpu.addon.readBandwidth(threads), bound = (before + after) / 2 / bytes;
  shares.push(tps / bound);
  console.log(`round ${r + 1}: ${tps.toFixed(1)} t/s, bandwidth ${(before / 1e9).toFixed(1)} / ${(after / 1e9).toFixed(1)} GB/s, bound ${bound.toFixed(1)} t/s, share ${shares.at(-1).toFixed(3)}`);
}
console.log(`${path.split("/").pop()}, ${threads} thread(s), depth ${depth}: median share of the bound ${[...shares].sort((a, b) => a - b)[shares.length >> 1].toFixed(3)}`);
process.exit(0);
