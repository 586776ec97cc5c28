// The KV cache: its storage types (f32, f16, q8_0) and sliding-window layers that keep only their
// window. Unit tests on a tiny random model need nothing outside the repo; the distances of F16
// and Q8_0 caches from F32 are measured on SmolLM2 (fixtures) and bounded in tolerances.ts.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { configOf, loadModelFromFile } from "../src/archs/index.js";
import type { LanguageModel } from "../src/archs/model.js";
import { cpuBackend, kernelsFor } from "../src/backends/index.js";
import { tsKernels } from "../src/backends/ts/index.js";
import type { Device } from "../src/backends/kernels.js";
import { KVCache } from "../src/blocks/kvCache.js";
import type { KVType } from "../src/blocks/kvCacheTypes.js";
import { scoreWindows } from "../src/engines/evaluate.js";
import { parseGGUF, readGGUF } from "../src/io/gguf/reader.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { fixtures, sharedDataDir } from "./helpers/fixtures.js";
import { loadRef } from "./helpers/refs.js";
import { tinyLlamaBytes } from "./helpers/tiny-model.js";
import { KV_CACHE_DISTANCE } from "./helpers/tolerances.js";

const cpuSkip = "error" in cpuBackend() ? `cpu backend unavailable: ${(cpuBackend() as { error: string }).error}` : false;
const devices: Device[] = cpuSkip ? ["ts"] : ["ts", "cpu"];

/** A tiny llama whose attention uses a sliding window of `window` on even layers (or all). */
function windowedModel(device: Device, window: number, layers: "even" | "all", ctx = 1024): LanguageModel {
  const file = parseGGUF(tinyLlamaBytes({ nEmbd: 128, nHead: 4, nKVHead: 2, nLayer: 3, nFF: 64, ctx }), "tiny-windowed.gguf"); // head size 32
  const config = configOf(file);
  return loadModelFromFile(file, device, { ...config, attention: { ...config.attention, window, windowPattern: layers === "even" ? 2 : 0 } });
}

/** A cache that keeps every position on every layer (what caches did before windows). */
function fullCache(model: LanguageModel, capacity: number): KVCache {
  return new KVCache(model.config.nLayer, capacity, model.config.nKVHead * model.config.headDim);
}

const ids = (n: number, seed = 3) => Array.from({ length: n }, (_, i) => 3 + ((i * 37 + seed * 11) % 250));

/** Logits of every step: `prompt` tokens in forwards of `chunk` rows, then one at a time. */
function run(model: LanguageModel, cache: KVCache, tokens: number[], prompt: number, chunk = prompt): Float32Array[] {
  const out: Float32Array[] = [];
  for (let s = 0; s < prompt; s += chunk) out.push(model.forward(Int32Array.from(tokens.slice(s, Math.min(prompt, s + chunk))), cache, "all").data.slice());
  for (let t = prompt; t < tokens.length; t++) out.push(model.forward(Int32Array.of(tokens[t]), cache, "last").data.slice());
  return out;
}

for (const device of devices) {
  test(`sliding-window layers keep only their window, with the bits of a full cache (${device})`, () => {
    // ts is the slow reference: a short run; cpu: a window over several 128-key chunks, a prompt
    // longer than the window in one forward, and decoding far past it.
    const [window, prompt, total] = device === "ts" ? [8, 20, 160] : [200, 450, 900];
    const model = windowedModel(device, window, "even");
    const tokens = ids(total);
    const ring = model.newCache(total), full = fullCache(model, total);
    assert.deepEqual(run(model, ring, tokens, prompt), run(model, full, tokens, prompt));
    // Windowed layers (0 and 2) hold about a window; the global layer holds everything.
    for (const l of [0, 2]) assert.ok(ring.layers[l].rows <= window + 2 * 64, `layer ${l}: ${ring.layers[l].rows} rows`);
    assert.equal(ring.layers[1].rows, total);
    assert.ok(ring.bytes < full.bytes, `${ring.bytes} < ${full.bytes}`);
    // A prompt read in pieces sees the same keys.
    const pieces = model.newCache(total);
    const chunked = run(model, pieces, tokens.slice(0, prompt + 5), prompt, 7);
    const whole = run(model, model.newCache(total), tokens.slice(0, prompt + 5), prompt);
    assert.deepEqual(chunked.at(-1), whole.at(-1));
  });

  test(`a cache in one buffer for all layers (hugePages) gives the bits of one buffer per layer (${device})`, () => {
    // Windowed layers (their own row counts), f32 rows viewed as floats by the ts backend, and the
    // cpu backend's huge-page mapping where it has one.
    const [window, prompt, total] = device === "ts" ? [8, 12, 40] : [200, 300, 500];
    const model = windowedModel(device, window, "even");
    const tokens = ids(total, 9);
    for (const type of ["f32", "f16"] as const) {
      const one = model.newCache(total, { type, hugePages: true }), own = model.newCache(total, { type });
      const views = one.layers.flatMap((l) => [l.keys.bytes, l.values.bytes]); // (a windowed layer may move its rows later)
      assert.deepEqual(run(model, one, tokens, prompt), run(model, own, tokens, prompt), type);
      assert.ok(views.every((v) => v.buffer === views[0].buffer && v.byteOffset % 64 === 0), `${type}: one buffer, 64-byte aligned views`);
      views.slice(1).forEach((v, i) => assert.ok(v.byteOffset >= views[i].byteOffset + views[i].byteLength, `${type}: view ${i + 1} overlaps`));
      assert.deepEqual(one.layers.map((l) => l.rows), own.layers.map((l) => l.rows), `${type}: rows per layer`);
    }
  });

  test(`truncate on sliding-window layers: keeps what it still can, reports 0 otherwise (${device})`, () => {
    const window = 8, total = 120; // past window + the 64 rows of slack: old rows get dropped
    const model = windowedModel(device, window, "all");
    const tokens = ids(total, 5);
    const cache = model.newCache(total);
    run(model, cache, tokens, 10);
    assert.equal(cache.truncate(total - 2), total - 2, "the last positions' windows are still held");
    const again = model.forward(Int32Array.from(tokens.slice(total - 2)), cache, "all").data;
    const fresh = model.forward(Int32Array.from(tokens), fullCache(model, total), "all").data;
    assert.deepEqual(again, fresh.slice((total - 2) * model.nVocab));
    assert.equal(cache.truncate(5), 0, "position 5's keys were dropped: nothing can be kept");
    assert.equal(cache.length, 0);
    const restart = model.forward(Int32Array.from(tokens.slice(0, 12)), cache, "all").data;
    assert.deepEqual(restart, fresh.slice(0, 12 * model.nVocab));
  });
}

test("cache types: bytes per position, and a clear error for q8_0 with a head size not a multiple of 32", () => {
  const model = windowedModel("ts", 0, "all");
  const f32 = model.newCache(100).bytes;
  assert.equal(model.newCache(100, { type: "f16" }).bytes, f32 / 2);
  assert.equal(model.newCache(100, { type: "q8_0" }).bytes, (f32 / 4 / 32) * 34);
  const file = parseGGUF(tinyLlamaBytes(), "tiny.gguf"); // head size 8
  assert.throws(() => loadModelFromFile(file, "ts", undefined, { cacheType: "q8_0" }), /q8_0 needs a head size that is a multiple of 32; this model's is 8/);
  assert.throws(() => loadModelFromFile(file, "ts", undefined, { cacheType: "q4" as KVType }), /unknown KV cache type "q4"/);
});

test("the cpu backend's huge-page buffers: zeroed, the length asked for, their own memory", { skip: cpuSkip }, () => {
  const k = kernelsFor("cpu");
  const bytes = (3 << 20) + 100, a = k.allocHugePages!(bytes), b = k.allocHugePages!(64);
  assert.ok(a && b, "mmap of a few MB should not fail here");
  assert.equal(a.length, bytes);
  assert.ok(a.every((x) => x === 0) && b.every((x) => x === 0));
  a.fill(7);
  assert.ok(b.every((x) => x === 0), "separate mappings");
  assert.throws(() => k.allocHugePages!(0), /allocHugePages: bad length 0/);
});

test("the cpu backend writes F16 and Q8_0 cache rows byte for byte as the ts reference does", { skip: cpuSkip }, () => {
  const n = 64 * 96, x = new Float32Array(n);
  let s = 7;
  for (let i = 0; i < n; i++) { s = (s * 1103515245 + 12345) >>> 0; x[i] = ((s / 2 ** 32) - 0.5) * 10 ** ((i % 7) - 3); }
  x.fill(0, 64, 96); // an all-zero block
  for (let i = 128; i < 160; i++) x[i] = (i - 144) * 0.5; // halfway cases of q = round(x / d)
  for (const type of ["f32", "f16", "q8_0"] as const) {
    const bytes = type === "f32" ? 4 * n : type === "f16" ? 2 * n : (n / 32) * 34;
    const a = new Uint8Array(bytes + 8), b = new Uint8Array(bytes + 8);
    kernelsFor("cpu").storeKV(x, type, a, 8);
    tsKernels.storeKV(x, type, b, 8);
    assert.deepEqual(a, b, type);
  }
});

// Both backends store K and V with the same rounding code (the test above), so with an F32 or
// F16 cache they agree as closely as exact math does (tolerances.ts: 2e-3). The K and V values
// themselves come from float32 products summed in different orders (last-bit differences), and
// where one sits on a Q8_0 rounding boundary its code flips: that value moves by a whole step,
// 1/127 of its block's largest value, and the logits by up to ~0.04 (measured with
// TOY_SIMD=scalar; the SIMD paths happened to flip none). Q8_0's bound is 0.1: a wrong block
// layout or scale moves logits by far more (the tiny model's logits span ±9).
test("f16 and q8_0 caches: the cpu backend's logits agree with the ts reference's", { skip: cpuSkip }, () => {
  const tokens = ids(30);
  for (const type of ["f32", "f16", "q8_0"] as const) {
    const [ts, cpu] = (["ts", "cpu"] as const).map((d) => { const m = windowedModel(d, 0, "all"); return run(m, m.newCache(30, { type }), tokens, 30)[0]; });
    let d = 0, span = 0;
    for (let i = 0; i < ts.length; i++) { d = Math.max(d, Math.abs(ts[i] - cpu[i])); span = Math.max(span, Math.abs(ts[i])); }
    console.log(`# ${type} cache: cpu vs ts max |Δlogit| ${d.toExponential(2)} (logits within ±${span.toFixed(1)})`);
    assert.ok(d < (type === "q8_0" ? 0.1 : 2e-3), `${type}: max |Δlogit| ${d}`);
  }
});

// SmolLM2 (a real checkpoint): how far F16 and Q8_0 caches move logits, greedy decoding and
// perplexity from an F32 cache.
const fx = fixtures();
const data = sharedDataDir();
const smolSkip = fx.skip || cpuSkip || (!data && "tinyshakespeare.txt not found");
test("SmolLM2: F16 and Q8_0 KV caches stay within the documented distance of F32 (cpu)", { skip: smolSkip }, () => {
  const path = join(fx.dir, "models", "SmolLM2-135M-Instruct.Q4_1.gguf");
  const file = readGGUF(path);
  const ref = loadRef(fx.dir, "llamacpp", "SmolLM2-135M-Instruct.Q4_1")!;
  const text = tokenizerFromMetadata(file.metadata, path).encode(readFileSync(join(data!, "tinyshakespeare.txt"), "utf8"));
  const model = (type: KVType) => loadModelFromFile(file, "cpu", undefined, { cacheType: type });
  const greedy = (m: LanguageModel, n: number) => {
    const cache = m.newCache();
    let logits = m.forward(Int32Array.from(ref.prompt), cache, "last").data;
    const tokens: number[] = [], margins: number[] = [];
    for (let i = 0; i < n; i++) {
      let a = 0, b = -1;
      for (let j = 1; j < logits.length; j++) if (logits[j] > logits[a]) { b = a; a = j; } else if (b < 0 || logits[j] > logits[b]) b = j;
      tokens.push(a); margins.push(logits[a] - logits[b]);
      logits = m.forward(Int32Array.of(a), cache, "last").data;
    }
    return { tokens, margins };
  };
  const base = model("f32");
  const logits32 = base.forward(Int32Array.from(ref.prompt), base.newCache(), "all").data;
  const greedy32 = greedy(base, 64);
  const ppl = (m: LanguageModel) => scoreWindows(m, text, { window: 512, maxTokens: 2048, topK: 0 }).perplexity;
  const ppl32 = ppl(base);
  // Prompt logits under exact math (ts): the cache's own error, not amplified by the cpu
  // backend's 8-bit activations (12 tokens: ts is the slow reference).
  const exact = (type: KVType) => { const m = loadModelFromFile(file, "ts", undefined, { cacheType: type }); return m.forward(Int32Array.from(ref.prompt.slice(0, 12)), m.newCache(), "all").data; };
  const exact32 = exact("f32");
  for (const type of ["f16", "q8_0"] as const) {
    const tol = KV_CACHE_DISTANCE[type];
    const e = exact(type);
    let de = 0;
    for (let i = 0; i < e.length; i++) de = Math.max(de, Math.abs(e[i] - exact32[i]));
    console.log(`# SmolLM2 ${type} cache vs f32, exact math (ts): prompt max |Δlogit| ${de.toExponential(2)}`);
    assert.ok(de <= tol.exactLogits, `${type}: exact-math prompt max |Δlogit| ${de} > ${tol.exactLogits}`);
    const m = model(type);
    const logits = m.forward(Int32Array.from(ref.prompt), m.newCache(), "all").data;
    let d = 0;
    for (let i = 0; i < logits.length; i++) d = Math.max(d, Math.abs(logits[i] - logits32[i]));
    const g = greedy(m, 64);
    const same = g.tokens.findIndex((t, i) => t !== greedy32.tokens[i]);
    const agree = same < 0 ? 64 : same;
    const p = ppl(m);
    console.log(`# SmolLM2 ${type} cache vs f32: prompt max |Δlogit| ${d.toExponential(2)}, greedy equal for ${agree}/64 steps${agree < 64 ? ` (f32 margin there ${greedy32.margins[agree].toFixed(3)})` : ""}, perplexity ${p.toFixed(4)} vs ${ppl32.toFixed(4)} (${((p / ppl32 - 1) * 100).toFixed(3)}%)`);
    assert.ok(d <= tol.logits, `${type}: prompt max |Δlogit| ${d} > ${tol.logits}`);
    // Greedy may part only at a step where the F32 run's top two were within the margin.
    if (agree < 64) assert.ok(greedy32.margins[agree] < tol.margin, `${type}: greedy parts at step ${agree} where the f32 margin is ${greedy32.margins[agree]}`);
    assert.ok(Math.abs(p / ppl32 - 1) <= tol.perplexity, `${type}: perplexity ${p} vs ${ppl32}`);
  }
});
