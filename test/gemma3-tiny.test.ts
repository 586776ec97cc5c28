// Gemma 3 without the real file: a tiny random-weight gemma3 GGUF written by the test (7 layers,
// so layer 5 is global and 0..4 and 6 slide; a window of 4 tokens). Its config follows llama.cpp's
// reading of the metadata, its card parses back, the window and the local RoPE base really apply
// (decode = prompt, the training forward = the inference forward, ts = cpu), and it trains.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSlidingLayer, layerRope, type ModelConfig } from "../src/archs/config.js";
import { configOf, loadModelFromFile } from "../src/archs/index.js";
import { Tape } from "../src/autograd/tape.js";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import { parseCard, renderCard } from "../src/card/index.js";
import { trainingForward } from "../src/train/objectives.js";
import { parametersFromFile } from "../src/train/params.js";
import { ModelFileError } from "../src/errors.js";
import { readGGUF } from "../src/io/gguf/reader.js";
import { lora } from "../src/recipes/lora.js";
import { warmStart } from "../src/recipes/warmStart.js";
import { writeTinyGemma3, type TinyGemma3Params } from "./helpers/tiny-gemma3.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-gemma3-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const write = (overrides: Partial<TinyGemma3Params> = {}) => {
  const path = join(tmp, `g${n++}.gguf`);
  writeTinyGemma3(path, overrides);
  return path;
};
const tinyPath = write();
const hasCpu = !("error" in cpuBackend());

/** 20 tokens: five times the window, so every sliding layer drops keys. */
const IDS = Int32Array.from([1, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200, 210, 220, 230, 240, 250]);

function promptLogits(path: string, device: Device, config?: ModelConfig): Float32Array {
  const model = loadModelFromFile(readGGUF(path), device, config);
  return model.forward(IDS, model.newCache(), "all").data;
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>, from = 0, to = a.length) => {
  let m = 0;
  for (let i = from; i < to; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

test("tiny gemma3: the config is read as llama.cpp reads it", () => {
  const c = configOf(readGGUF(tinyPath));
  assert.equal(c.arch, "gemma3");
  assert.equal(c.attention.window, 4);
  assert.equal(c.attention.windowPattern, 6, "llama.cpp's default pattern when the file has none");
  assert.deepEqual(c.rope && { base: c.rope.base, style: c.rope.style, sliding: c.rope.sliding }, { base: 1e6, style: "neox", sliding: { base: 10000, freqScale: 1 } });
  assert.equal(c.attention.qkNorm, "head");
  assert.equal(c.attention.scale, 1 / Math.sqrt(8));
  assert.equal(c.attention.softcap, 0);
  assert.equal(c.embedScale, Math.sqrt(32));
  assert.equal(c.ffn.kind, "geglu");
  assert.ok(c.postNorms && c.tiedOutput);
  assert.equal(c.finalSoftcap, 0);
  assert.deepEqual(Array.from({ length: 7 }, (_, l) => isSlidingLayer(c, l)), [true, true, true, true, true, false, true]);
  assert.deepEqual(layerRope(c, 4), { base: 10000, freqScale: 1 });
  assert.deepEqual(layerRope(c, 5), { base: 1e6, freqScale: 1 });
});

test("tiny gemma3: sliding_window_pattern as a period or per-layer flags; linear RoPE scaling only on global layers", () => {
  const c3 = configOf(readGGUF(write({ pattern: 3 })));
  assert.deepEqual(Array.from({ length: 7 }, (_, l) => isSlidingLayer(c3, l)), [true, true, false, true, true, false, true]);
  const flags = configOf(readGGUF(write({ pattern: [true, true, false, true, true, false, true] })));
  assert.equal(flags.attention.windowPattern, 3);
  assert.throws(() => configOf(readGGUF(write({ pattern: [true, false, false, true, true, false, true] }))), ModelFileError);
  const scaled = configOf(readGGUF(write({ ropeScaling: 8 })));
  assert.deepEqual(layerRope(scaled, 5), { base: 1e6, freqScale: 0.125 });
  assert.deepEqual(layerRope(scaled, 0), { base: 10000, freqScale: 1 });
  const global = configOf(readGGUF(write({ window: 0 })));
  assert.equal(global.rope!.sliding, null);
  assert.ok(!isSlidingLayer(global, 0));
});

test("tiny gemma3: the card renders the window pattern and the local RoPE, and parses back", () => {
  const c = configOf(readGGUF(tinyPath));
  const card = renderCard(c);
  for (const s of ["w = 4", "window_pattern = 6", "θ_swa = 10000", "s_rope_swa = 1", "qk_norm = head", "c_out = 0"]) assert.ok(card.includes(`  ${s} `), s);
  assert.match(card, /when l mod 6 < 5, t − w < t′/);
  assert.doesNotMatch(card, /c_out · tanh/);
  assert.deepEqual(parseCard(card), c);
});

test("tiny gemma3: the window and the local RoPE base change exactly what they should", () => {
  const base = configOf(readGGUF(tinyPath));
  const V = base.nVocab;
  const windowed = promptLogits(tinyPath, "ts");
  const wide = promptLogits(tinyPath, "ts", { ...base, attention: { ...base.attention, window: 64 } });
  // Before the window fills, the window changes nothing; after, it must.
  assert.ok(maxDiff(windowed, wide, 0, 4 * V) < 1e-5, "positions 0..3 see all their keys either way");
  assert.ok(maxDiff(windowed, wide, 4 * V) > 1e-3, "later positions lose the keys outside the window");
  const sameBase = promptLogits(tinyPath, "ts", { ...base, rope: { ...base.rope!, sliding: null } });
  assert.ok(maxDiff(windowed, sameBase, V) > 1e-3, "sliding layers rotate with base 10000, not the global 1e6");
});

test("tiny gemma3: decoding one token at a time through the cache equals reading the prompt", () => {
  const model = loadModelFromFile(readGGUF(tinyPath), "ts");
  const all = model.forward(IDS, model.newCache(), "all").data;
  const cache = model.newCache();
  let worst = 0;
  IDS.forEach((id, t) => {
    const row = model.forward(Int32Array.of(id), cache, "last").data;
    worst = Math.max(worst, maxDiff(row, all.subarray(t * model.nVocab, (t + 1) * model.nVocab)));
  });
  assert.ok(worst < 1e-4, `max |Δ| ${worst}`);
});

test("tiny gemma3: the training forward computes the inference forward", () => {
  const file = readGGUF(tinyPath);
  const c = configOf(file);
  const tape = new Tape();
  const batch = { input: IDS, target: IDS, batch: 1, seq: IDS.length };
  const { logits } = trainingForward(tape, c, parametersFromFile(file), batch);
  const d = maxDiff(logits.data, promptLogits(tinyPath, "ts"));
  tape.release();
  assert.ok(d < 1e-4, `max |Δ| ${d}`);
});

test("tiny gemma3: cpu agrees with ts", { skip: hasCpu ? false : "SKIPPED: the native cpu backend is not built" }, () => {
  const d = maxDiff(promptLogits(tinyPath, "cpu"), promptLogits(tinyPath, "ts"));
  assert.ok(d < 2e-3, `max |Δ| ${d}`);
});

test("tiny gemma3: warm start and LoRA lower the loss", () => {
  const batch = { input: IDS.subarray(0, 19), target: IDS.subarray(1), batch: 1, seq: 19 };
  const full = warmStart.realize(tinyPath, { lr: 1e-2, steps: 4, seed: 1 });
  const before = full.trainer.evaluate(batch);
  for (let i = 0; i < 4; i++) full.step(batch);
  assert.ok(full.trainer.evaluate(batch) < before, "warm start");
  const run = lora.realize(tinyPath, { rank: 2, alpha: 4, targets: ["attn_q", "attn_v", "ffn_down"], lr: 0.05, steps: 4, seed: 1 });
  const l0 = run.trainer.evaluate(batch);
  assert.ok(Math.abs(l0 - before) < 1e-5, "B = 0: the adapted model is the base model");
  for (let i = 0; i < 4; i++) run.step(batch);
  assert.ok(run.trainer.evaluate(batch) < l0, "LoRA");
});
