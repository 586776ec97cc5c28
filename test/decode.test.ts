// The KV-cache decode engine against recomputing the whole sequence, and sampling, on tiny
// models built with toy's own GGUF writer (no fixtures needed).

import { test } from "node:test";
import assert from "node:assert/strict";
import { loadModelFromFile } from "../src/archs/index.js";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import { generate } from "../src/engines/generate.js";
import { DEFAULT_SAMPLING, Sampler, topIds } from "../src/engines/sampling.js";
import { parseGGUF } from "../src/io/gguf/reader.js";
import { tinyLlamaBytes, type TinyLlamaParams } from "./helpers/tiny-model.js";

const devices: Device[] = ["ts", ...("error" in cpuBackend() ? [] : (["cpu"] as Device[]))];
const greedy = { ...DEFAULT_SAMPLING, temperature: 0 };

function tiny(device: Device, p: Partial<TinyLlamaParams> = {}) {
  return loadModelFromFile(parseGGUF(tinyLlamaBytes(p), "tiny.gguf"), device);
}

for (const device of devices) {
  for (const variant of [{}, { tied: true }, { nKVHead: 1 }, { nKVHead: 4 }] as Partial<TinyLlamaParams>[]) {
    test(`KV-cache decoding equals full recomputation (${device}, ${JSON.stringify(variant)})`, () => {
      const model = tiny(device, variant);
      const prompt = [1, 100, 200, 37];
      const out = generate(model, prompt, { maxTokens: 12, sampling: greedy });
      assert.equal(out.tokens.length, 12);
      const seq = [...prompt];
      for (const tok of out.tokens) {
        // Recompute every position from an empty cache; the last row picks the next token.
        const logits = model.forward(Int32Array.from(seq), model.newCache(), "all");
        const last = logits.data.subarray((seq.length - 1) * model.nVocab, seq.length * model.nVocab);
        assert.equal(topIds(last, 1)[0], tok);
        seq.push(tok);
      }
      // And the logits themselves: one token at a time through the cache vs all at once.
      const cache = model.newCache();
      const all = model.forward(Int32Array.from(seq), model.newCache(), "all").data;
      let worst = 0;
      seq.forEach((id, i) => {
        const row = model.forward(Int32Array.of(id), cache, "last").data;
        for (let v = 0; v < model.nVocab; v++) worst = Math.max(worst, Math.abs(row[v] - all[i * model.nVocab + v]));
      });
      assert.ok(worst < 1e-4, `cached vs full logits differ by ${worst}`);
    });
  }

  test(`the context limit gives a clear error (${device})`, () => {
    const model = tiny(device, { ctx: 16 });
    assert.throws(() => generate(model, Array.from({ length: 17 }, (_, i) => 3 + i), { maxTokens: 1, sampling: greedy }), /longer than the context \(16 tokens\)/);
    const out = generate(model, [1, 2, 3], { maxTokens: 100, sampling: greedy });
    assert.equal(out.finishReason, "length");
    assert.ok(out.tokens.length <= 16 - 3 + 1);
  });
}

test("seeded sampling is reproducible and seeds differ", () => {
  const model = tiny("ts");
  const opts = { ...DEFAULT_SAMPLING, temperature: 1.5, topK: 0, topP: 1, minP: 0 };
  const a = generate(model, [1, 5], { maxTokens: 20, sampling: { ...opts, seed: 7 } }).tokens;
  const b = generate(model, [1, 5], { maxTokens: 20, sampling: { ...opts, seed: 7 } }).tokens;
  const c = generate(model, [1, 5], { maxTokens: 20, sampling: { ...opts, seed: 8 } }).tokens;
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
});

test("sampling filters: top-k 1 and tiny top-p are greedy; min-p keeps only near-best tokens", () => {
  const logits = Float32Array.from([0.1, 3, 2.9, -1, 0.5]);
  for (let seed = 0; seed < 20; seed++) {
    assert.equal(new Sampler({ ...DEFAULT_SAMPLING, temperature: 1, topK: 1, seed }).sample(logits), 1);
    assert.equal(new Sampler({ ...DEFAULT_SAMPLING, temperature: 1, topK: 0, topP: 0.01, seed }).sample(logits), 1);
    const t = new Sampler({ ...DEFAULT_SAMPLING, temperature: 1, topK: 0, topP: 1, minP: 0.5, seed }).sample(logits);
    assert.ok(t === 1 || t === 2);
  }
  assert.equal(new Sampler({ ...DEFAULT_SAMPLING, temperature: 0 }).sample(logits), 1);
  // Repetition penalty: a repeated best token loses to the runner-up.
  assert.equal(new Sampler({ ...DEFAULT_SAMPLING, temperature: 0, repeatPenalty: 2 }).sample(logits, [1]), 2);
});

test("sampling follows the distribution", () => {
  const logits = Float32Array.from([Math.log(0.7), Math.log(0.2), Math.log(0.1)]);
  const s = new Sampler({ ...DEFAULT_SAMPLING, temperature: 1, topK: 0, topP: 1, minP: 0, seed: 3 });
  const counts = [0, 0, 0];
  for (let i = 0; i < 20000; i++) counts[s.sample(logits)]++;
  assert.ok(Math.abs(counts[0] / 20000 - 0.7) < 0.02 && Math.abs(counts[1] / 20000 - 0.2) < 0.02, `counts ${counts}`);
});

test("topIds returns the k largest, best first", () => {
  const x = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i * 12.9898) * 43758.5453 % 1);
  const sorted = Array.from({ length: 1000 }, (_, i) => i).sort((a, b) => x[b] - x[a]);
  assert.deepEqual(topIds(x, 10), sorted.slice(0, 10));
  assert.deepEqual(topIds(x, 600), sorted.slice(0, 600));
  // Ties go to the smaller index, whichever path (heap or sort) runs.
  const ties = Float32Array.from({ length: 1000 }, (_, i) => [3, 1, 3, 2, -Infinity][i % 5]);
  const order = Array.from({ length: 1000 }, (_, i) => i).sort((a, b) => ties[b] - ties[a] || a - b);
  assert.deepEqual(topIds(ties, 40), order.slice(0, 40));
  assert.deepEqual(topIds(ties, 900), order.slice(0, 900));
});

for (const device of devices) {
  test(`forwardBatch: several sequences in one pass equal separate passes (${device})`, () => {
    for (const variant of [{}, { nKVHead: 1 }] as Partial<TinyLlamaParams>[]) {
      const model = tiny(device, variant);
      const prompts = [[1, 50, 60], [1, 7], [1, 9, 9, 9, 9], [1]];
      const alone = prompts.map((p) => ({ cache: model.newCache(), ids: p }));
      const batched = prompts.map((p) => ({ cache: model.newCache(), ids: p }));
      for (const s of alone) model.forward(Int32Array.from(s.ids), s.cache, "last");
      for (const s of batched) model.forward(Int32Array.from(s.ids), s.cache, "last");
      // Then three decode steps: one at a time vs all sequences in one forwardBatch.
      for (let step = 0; step < 3; step++) {
        const next = prompts.map((_, i) => 20 + i * 3 + step);
        const rows = alone.map((s, i) => model.forward(Int32Array.of(next[i]), s.cache, "last").data);
        const batch = model.forwardBatch(batched.map((s, i) => ({ ids: Int32Array.of(next[i]), cache: s.cache })));
        assert.deepEqual(batch.shape, [prompts.length, model.nVocab]);
        rows.forEach((row, i) => {
          const b = batch.data.subarray(i * model.nVocab, (i + 1) * model.nVocab);
          for (let v = 0; v < model.nVocab; v++) assert.ok(Math.abs(row[v] - b[v]) < 1e-5, `sequence ${i} step ${step} token ${v}: ${row[v]} vs ${b[v]}`);
        });
      }
      batched.forEach((s, i) => assert.equal(s.cache.length, prompts[i].length + 3));
    }
  });
}
