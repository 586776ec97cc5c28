// Copying a prompt's start from one KV cache to another (what `toy serve` does when a request's
// prompt starts like one another slot holds): it is only right if the keys and values of a
// position do not depend on how the tokens before it were read, in one forward or in chunks of
// any size, alone or batched with other sequences. Checked bit for bit on the stored rows, then
// that a cache continued from a copy gives the logits of a fresh run, bit for bit, also on
// sliding-window layers, and that a copy the source can no longer give is refused unchanged.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { configOf, loadModelFromFile } from "../src/archs/index.js";
import type { LanguageModel } from "../src/archs/model.js";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import type { KVCache } from "../src/blocks/kvCache.js";
import { KV_TYPES, type KVType } from "../src/blocks/kvCacheTypes.js";
import { parseGGUF, readGGUF } from "../src/io/gguf/reader.js";
import { fixtures } from "./helpers/fixtures.js";
import { tinyLlamaBytes } from "./helpers/tiny-model.js";
import { webgpu } from "./helpers/webgpu.js";

const cpuSkip = "error" in cpuBackend() ? `cpu backend unavailable: ${(cpuBackend() as { error: string }).error}` : false;
const devices: Device[] = cpuSkip ? ["ts"] : ["ts", "cpu"];
const fx = fixtures();

/** A tiny llama (head size 32); window > 0: a sliding window on even layers. */
function tinyModel(device: Device, window = 0, type: KVType = "f32"): LanguageModel {
  const file = parseGGUF(tinyLlamaBytes({ nEmbd: 128, nHead: 4, nKVHead: 2, nLayer: 3, nFF: 64, ctx: 1024 }), "tiny.gguf");
  const config = configOf(file);
  return loadModelFromFile(file, device, { ...config, attention: { ...config.attention, window, windowPattern: window > 0 ? 2 : 0 } }, { cacheType: type });
}

const ids = (n: number, seed = 3, vocab = 250) => Array.from({ length: n }, (_, i) => 3 + ((i * 37 + seed * 11) % vocab));

/** Read `tokens` into a fresh cache in forwards of the given sizes; `others`: a sequence batched beside each. */
function read(model: LanguageModel, tokens: number[], splits: number[], others = false): KVCache {
  const cache = model.newCache(256), other = model.newCache(256);
  let at = 0;
  for (const [k, n] of splits.entries()) {
    const mine = { ids: Int32Array.from(tokens.slice(at, at + n)), cache };
    const theirs = { ids: Int32Array.from(ids(1 + (k % 3), 40 + k)), cache: other };
    model.forwardBatch(others ? (k % 2 ? [mine, theirs] : [theirs, mine]) : [mine]);
    at += n;
  }
  assert.equal(at, tokens.length);
  return cache;
}

/** The first layer (and position) whose stored key or value rows differ, else null. */
function firstDifference(a: KVCache, b: KVCache, n: number): string | null {
  for (const [l, la] of a.layers.entries()) {
    const lb = b.layers[l], rowBytes = la.keys.bytes.byteLength / la.rows;
    for (const kv of ["keys", "values"] as const) {
      for (let p = Math.max(la.base, lb.base); p < n; p++) {
        const x = la[kv].bytes.subarray((p - la.base) * rowBytes, (p - la.base + 1) * rowBytes);
        const y = lb[kv].bytes.subarray((p - lb.base) * rowBytes, (p - lb.base + 1) * rowBytes);
        if (!Buffer.from(x).equals(Buffer.from(y))) return `layer ${l} ${kv}, position ${p}`;
      }
    }
  }
  return null;
}

const SPLITS = (n: number) => [[n], [1, n - 1], [7, 7, 7, n - 21], [n - 6, 6], Array<number>(n).fill(1)];

function checkSplits(model: LanguageModel, tokens: number[], label: string): void {
  const whole = read(model, tokens, [tokens.length]);
  for (const splits of SPLITS(tokens.length)) {
    for (const others of [false, true]) {
      const d = firstDifference(whole, read(model, tokens, splits, others), tokens.length);
      assert.equal(d, null, `${label}: read in forwards of ${splits.length > 6 ? "1 row" : splits.join(" + ")} rows${others ? ", beside another sequence" : ""}: ${d} differs`);
    }
  }
}

for (const device of devices) {
  test(`the K/V rows of a position do not depend on the chunks or the batch it was read in (tiny model, ${device})`, () => {
    for (const type of KV_TYPES) checkSplits(tinyModel(device, 0, type), ids(40), `${type} cache`);
  });

  test(`a cache continued from a copied prefix gives a fresh run's logits, bit for bit; a copy the source cannot give is refused (${device})`, () => {
    for (const window of [0, 8]) {
      const model = tinyModel(device, window);
      const tokens = ids(60, 5);
      const fresh = model.forward(Int32Array.from(tokens), model.newCache(256), "all").data;
      // The source read 50 tokens (a prompt and an answer, say); the copy takes its first 30.
      const source = read(model, tokens.slice(0, 50), [20, 30]);
      const target = model.newCache(256);
      model.forward(Int32Array.from(ids(12, 9)), target, "last"); // other work, which the copy drops
      assert.equal(target.copyPrefix(source, 30), true);
      assert.equal(target.length, 30);
      const continued = model.forward(Int32Array.from(tokens.slice(30)), target, "all").data;
      assert.deepEqual(continued, fresh.slice(30 * model.nVocab), `window ${window}: logits after the copy`);
      // Refused, the target unchanged: more positions than the source holds.
      assert.equal(target.copyPrefix(source, 51), false);
      assert.equal(target.length, 60);
    }
    // A sliding-window source that has dropped the keys position 5 needs.
    const model = tinyModel(device, 8);
    const tokens = ids(150, 7);
    const long = read(model, tokens, [10, ...Array<number>(140).fill(1)]); // decoding far past the window
    assert.ok(long.layers[0].base > 0, "the windowed layer dropped old positions");
    const target = model.newCache(256);
    assert.equal(target.copyPrefix(long, 5), false);
    assert.equal(target.length, 0);
    assert.equal(target.copyPrefix(long, 148), true, "the last positions' windows are still held");
    const fresh = model.forward(Int32Array.from(tokens), model.newCache(256), "all").data;
    assert.deepEqual(model.forward(Int32Array.from(tokens.slice(148)), target, "all").data, fresh.slice(148 * model.nVocab));
  });
}

test("SmolLM2: the K/V rows of a position do not depend on the chunks or the batch it was read in (cpu, every cache type)", { skip: fx.skip || cpuSkip }, () => {
  const file = readGGUF(join(fx.dir, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"));
  // 70 tokens: the prompt path's matrix products over several row blocks, and one-row decode steps.
  const tokens = ids(70, 1, 40000);
  for (const type of KV_TYPES) checkSplits(loadModelFromFile(file, "cpu", undefined, { cacheType: type }), tokens, `SmolLM2 ${type} cache`);
});

// webgpu: GpuKVCache.copyPrefix copies each layer's buffers (and q8_0's scales) on the queue; a
// cache continued from the copy gives a fresh run's logits bit for bit, in every cache type.
const gpu = await webgpu();
test("webgpu: a cache continued from a copied prefix gives a fresh run's logits (f32, f16, q8_0)", { skip: gpu.skip }, async () => {
  for (const type of KV_TYPES) {
    const model = tinyModel("webgpu", 0, type);
    const prompt = ids(40), more = ids(5, 9);
    const source = model.newCache(64);
    await model.forwardAsync!(Int32Array.from(prompt), source, "last");
    const copy = model.newCache(64);
    assert.ok(copy.copyPrefix(source, 30), type);
    const continued = await model.forwardAsync!(Int32Array.from([...prompt.slice(30), ...more]), copy, "all");
    const fresh = model.newCache(64);
    const whole = await model.forwardAsync!(Int32Array.from([...prompt, ...more]), fresh, "all");
    const tail = whole.data.subarray(30 * model.nVocab);
    assert.deepEqual(continued.data, tail, `${type}: continued from a copy`);
  }
});
