// Recorded decode steps (archs/decodeReplay.ts, native/plan.c): a replayed step gives the logits
// the forward gives, bit for bit, on tiny random-weight models written by the test — through
// cache truncation, a copied prefix, a long prompt between steps (sliding-window layers then take
// new buffers: recorded again), sliding-window layers that drop keys and move their rows, and
// every KV-cache type, and batches of several conversations whose members change — and a forward
// that computes in TypeScript is never replayed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configOf, loadModelFromFile } from "../src/archs/index.js";
import type { LanguageModel } from "../src/archs/model.js";
import { cpuBackend } from "../src/backends/index.js";
import type { KVType, Kernels } from "../src/backends/kernels.js";
import { readGGUF } from "../src/io/gguf/reader.js";
import { argmax } from "../src/engines/sampling.js";
import { writeTinyGemma3 } from "./helpers/tiny-gemma3.js";
import { writeTinyLlama } from "./helpers/tiny-model.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-replay-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const cpu = cpuBackend();
const skip = "error" in cpu ? `the cpu backend is not built (${cpu.error})` : false;

// Count recordings and replays by wrapping the backend's recorder (models bind it at their first step).
const counts = { recorded: 0, refused: 0, replayed: 0 };
if (!("error" in cpu)) {
  const k = cpu.kernels as { recordStep: NonNullable<Kernels["recordStep"]> };
  const record = k.recordStep;
  k.recordStep = (kv, fn, result, logits) => {
    const r = record(kv, fn, result, logits);
    if (typeof r.plan === "string") counts.refused++;
    else {
      counts.recorded++;
      const plan = r.plan;
      r.plan = { run: (into) => { counts.replayed++; plan.run(into); } };
    }
    return r;
  };
}

const llamaPath = join(tmp, "llama.gguf"), gemmaPath = join(tmp, "gemma3.gguf");
if (!skip) {
  writeTinyLlama(llamaPath, { nEmbd: 64, nHead: 2, nKVHead: 1, nLayer: 3, ctx: 256, nVocab: 300 }); // head size 32: a Q8_0 cache works
  writeTinyGemma3(gemmaPath, { ctx: 256 }); // window 4: sliding layers keep 4 + 64 rows, so they move them every 64 steps
}

/** 150 greedy steps of a (replayed) against b (every step a forward), both from the same prompt;
 *  truncated at step 40, a prefix copied from a third cache at step 70, 100 tokens read at step 90. */
function compare(a: LanguageModel, b: LanguageModel, type: KVType): void {
  const ca = a.newCache(256, { type }), cb = b.newCache(256, { type }), other = b.newCache(256, { type });
  const prompt = Int32Array.of(1, 40, 50, 60, 70), stepLogits = new Float32Array(a.nVocab);
  b.forward(prompt, other, "all");
  let ta = argmax(a.forward(prompt, ca, "last").data), tb = argmax(b.forward(prompt, cb, "last").data);
  for (let step = 0; step < 150; step++) {
    if (step === 40) { ca.truncate(3); cb.truncate(3); }
    if (step === 70) { assert.ok(ca.copyPrefix(other, 5)); assert.ok(cb.copyPrefix(other, 5)); }
    if (step === 90) {
      const more = Int32Array.from({ length: 100 }, (_, i) => 3 + ((i * 7) % 250));
      ta = argmax(a.forward(more, ca, "last").data); tb = argmax(b.forward(more, cb, "last").data);
    }
    // a's logits go into one array on odd steps (forward's `out`, as a generation's steps), new ones on even steps
    const la = a.forward(Int32Array.of(ta), ca, "last", step % 2 ? stepLogits : undefined), lb = b.forward(Int32Array.of(tb), cb, "last");
    if (step % 2) assert.equal(la.data, stepLogits);
    assert.deepEqual(la.shape, lb.shape);
    assert.ok(Buffer.from(la.data.buffer, la.data.byteOffset, la.data.byteLength).equals(Buffer.from(lb.data.buffer, lb.data.byteOffset, lb.data.byteLength)),
      `${type} cache, step ${step}: the replayed logits differ from the forward's`);
    assert.equal(ca.length, cb.length);
    ta = argmax(la.data); tb = argmax(lb.data);
  }
}

for (const [name, path, types, recordings] of [["llama", llamaPath, ["f32", "f16", "q8_0"], 1], ["gemma3 (sliding windows)", gemmaPath, ["f32", "f16"], 2]] as const) {
  test(`decode replay: ${name} steps give the forward's logits bit for bit`, { skip }, () => {
    for (const type of types) {
      const before = { ...counts };
      const file = readGGUF(path);
      compare(loadModelFromFile(file, "cpu"), loadModelFromFile(file, "cpu", undefined, { replay: false }), type);
      // Recorded at the first step and (gemma3) again after the long prompt gave its sliding layers
      // new buffers; every other step replayed.
      assert.equal(counts.recorded - before.recorded, recordings, `${type}: recordings`);
      assert.equal(counts.replayed - before.replayed, 150 - recordings, `${type}: replayed steps`);
      assert.equal(counts.refused, before.refused);
    }
  });
}

test("decode replay: batched steps of several conversations give the forward's logits bit for bit", { skip }, () => {
  for (const path of [llamaPath, gemmaPath]) {
    const file = readGGUF(path), a = loadModelFromFile(file, "cpu"), b = loadModelFromFile(file, "cpu", undefined, { replay: false });
    // Three conversations of different lengths; the batch's members and order change twice.
    const prompts = [Int32Array.of(1, 20, 30), Int32Array.of(1, 40, 50, 60, 70, 80, 90), Int32Array.of(1, 99)];
    const ca = prompts.map(() => a.newCache(256, { type: "f16" })), cb = prompts.map(() => b.newCache(256, { type: "f16" }));
    let ta = prompts.map((p, i) => argmax(a.forward(p, ca[i], "last").data)), tb = prompts.map((p, i) => argmax(b.forward(p, cb[i], "last").data));
    const before = { ...counts };
    for (let step = 0; step < 120; step++) {
      const members = step < 40 ? [0, 1, 2] : step < 80 ? [0, 2] : [2, 0, 1];
      const out = step % 3 ? new Float32Array(members.length * a.nVocab) : undefined; // forwardBatch's `out` too
      const la = a.forwardBatch(members.map((m) => ({ ids: Int32Array.of(ta[m]), cache: ca[m] })), out);
      if (out) assert.equal(la.data, out);
      const lb = b.forwardBatch(members.map((m) => ({ ids: Int32Array.of(tb[m]), cache: cb[m] })));
      assert.deepEqual(la.shape, lb.shape);
      assert.ok(Buffer.from(la.data.buffer, la.data.byteOffset, la.data.byteLength).equals(Buffer.from(lb.data.buffer, lb.data.byteOffset, lb.data.byteLength)),
        `${path}: batched step ${step}: the replayed logits differ from the forward's`);
      const V = la.shape[1];
      members.forEach((m, i) => { ta[m] = argmax(la.data.subarray(i * V, (i + 1) * V)); tb[m] = argmax(lb.data.subarray(i * V, (i + 1) * V)); });
    }
    assert.equal(counts.recorded - before.recorded, 3, "one recording per membership of the batch");
    assert.equal(counts.replayed - before.replayed, 117);
  }
});

test("forward's out: the logits in the caller's array, of exactly their length", { skip }, () => {
  const model = loadModelFromFile(readGGUF(llamaPath), "cpu"), V = model.nVocab;
  const cache = model.newCache(64), ref = model.newCache(64), ids = Int32Array.of(1, 40, 50);
  const all = new Float32Array(3 * V);
  assert.equal(model.forward(ids, cache, "all", all).data, all);
  assert.deepEqual(all, model.forward(ids, ref, "all").data);
  assert.throws(() => model.forward(Int32Array.of(7), cache, "last", new Float32Array(V + 1)), /out holds 301 values; the logits are 1 row\(s\) × 300 = 300/);
  assert.equal(cache.length, 3, "a refused out leaves the cache as it was");
  assert.throws(() => model.forwardBatch([{ ids: Int32Array.of(7), cache }, { ids: Int32Array.of(8), cache: ref }], new Float32Array(V)), /the logits are 2 row\(s\)/);
});

test("decode replay: a forward that computes in TypeScript (a final soft-cap) is never replayed", { skip }, () => {
  const file = readGGUF(gemmaPath), config = { ...configOf(file), finalSoftcap: 30 };
  const before = { ...counts };
  compare(loadModelFromFile(file, "cpu", config), loadModelFromFile(file, "cpu", config, { replay: false }), "f32");
  assert.equal(counts.replayed, before.replayed);
});

test("decode replay: the cpu kernel's scale (Gemma's embedding scale) gives JavaScript's products", { skip }, () => {
  if ("error" in cpu) return;
  const x = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i * 1.7) * 10 ** ((i % 13) - 6)), out = new Float32Array(1000);
  for (const s of [Math.sqrt(640), Math.sqrt(2304), 1 / 3, -7.25]) {
    cpu.kernels.scale!(x, s, out);
    assert.deepEqual(out, x.map((v) => v * s), `scale by ${s}`);
  }
});

test("decode replay: the native plan calls check their use", { skip }, () => {
  if ("error" in cpu) return;
  const a = cpu.addon;
  assert.throws(() => a.planRun!({}, new Float32Array(1)), /planRun: expected a plan/);
  assert.throws(() => a.planEnd!(null, null), /planEnd: no plan is being recorded/);
  const keys = [new Uint8Array(64)], values = [new Uint8Array(64)];
  a.planBegin!([], keys, values, Float64Array.of(16), Int32Array.of(0));
  assert.throws(() => a.planBegin!([], keys, values, Float64Array.of(16), Int32Array.of(0)), /already being recorded/);
  // A KV-cache call at another row than the layer's makes the recording unusable, with the reason.
  a.storeKVPair(new Float32Array(4), new Float32Array(4), 0, keys[0], values[0], 32);
  assert.match(String(a.planEnd!(new Float32Array(1), new Float32Array(1))), /another row/);
  // A run writes the step's output into the array it is given (of the output's length), and
  // only there.
  const x = Float32Array.of(1, 2), y = Float32Array.of(10, 20), result = new Float32Array(2), own = new Float32Array(2), other = new Float32Array(2);
  a.planBegin!([], keys, values, Float64Array.of(16), Int32Array.of(0));
  a.add(x, y, result);
  const plan = a.planEnd!(result, own);
  assert.equal(typeof plan, "object");
  x[0] = 5;
  a.planRun!(plan as object, other);
  assert.deepEqual([other, own], [Float32Array.of(15, 22), Float32Array.of(0, 0)]);
  x[1] = 7;
  a.planRun!(plan as object, own);
  assert.deepEqual([other, own], [Float32Array.of(15, 22), Float32Array.of(15, 27)]);
  assert.throws(() => a.planRun!(plan as object, new Float32Array(3)), /planRun: logits of 3 values, not the step's/);
});
