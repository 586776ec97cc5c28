// The benchmark's pure parts (bench/tests.ts, bench/bounds.ts, bench/stats.ts): test names as llama-bench names
// them, and the bytes a decode step reads, on tiny models written here.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseTest, benchTokens } from "../bench/tests.js";
import { kvBytesPerToken, pairedBound, weightBytesPerToken } from "../bench/bounds.js";
import { median } from "../bench/stats.js";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { writeTinyLlama } from "./helpers/tiny-model.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-bench-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

test("test names: ppN, tgN and tgN@D as llama-bench's -p, -n and -d; anything else is refused with the expected form", () => {
  assert.deepEqual(parseTest("pp512"), { name: "pp512", kind: "pp", n: 512, depth: 0 });
  assert.deepEqual(parseTest("tg64"), { name: "tg64", kind: "tg", n: 64, depth: 0 });
  assert.deepEqual(parseTest("tg64@4096"), { name: "tg64@4096", kind: "tg", n: 64, depth: 4096 });
  assert.equal(parseTest("tg64@0").name, "tg64");
  for (const bad of ["pp128@1024", "tg", "pp0", "gen64", "tg64@x"]) assert.throws(() => parseTest(bad), /expected ppN .* or tgN\[@D\]/);
  const ids = benchTokens(600, 300);
  assert.ok(ids.every((t) => t >= 0 && t < 300));
});

test("decode bytes per token: every weight (one row of an untied embedding) and K, V of every cached position", () => {
  const tied = join(tmp, "tied.gguf"), untied = join(tmp, "untied.gguf");
  writeTinyLlama(tied, { tied: true, nLayer: 2, nEmbd: 64, nHead: 4, nKVHead: 2, nVocab: 300 });
  writeTinyLlama(untied, { tied: false, nLayer: 2, nEmbd: 64, nHead: 4, nKVHead: 2, nVocab: 300 });
  const all = (p: string) => readGGUFHeader(p).tensors.reduce((s, t) => s + t.byteLength, 0);
  assert.equal(weightBytesPerToken(tied), all(tied));
  const embd = readGGUFHeader(untied).tensors.find((t) => t.name === "token_embd.weight")!;
  assert.equal(weightBytesPerToken(untied), all(untied) - embd.byteLength + embd.byteLength / 300);
  // 2 layers × 100 positions × 2 KV heads × (16 + 16) values (K and V) × 2 bytes (F16).
  assert.equal(kvBytesPerToken(tied, 100), 2 * 100 * 2 * 32 * 2);
  assert.equal(kvBytesPerToken(tied, 100, "f32"), 2 * 100 * 2 * 32 * 4);
  assert.equal(kvBytesPerToken(tied, 64, "q8_0"), 2 * 64 * 2 * 32 * (34 / 32));
});

test("medians leave out unmeasured runs; a decode cell's share is the median of each run's t/s over the bound of its own bandwidth reading", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([NaN, 5]), 5);
  assert.ok(Number.isNaN(median([])));
  // 1e8 bytes a token: 30 GB/s bounds a run at 300 t/s, 45 GB/s at 450.
  const runs = [{ tps: 270, bandwidth: 30e9 }, { tps: 360, bandwidth: 45e9 }, { tps: 240, bandwidth: 30e9 }];
  const p = pairedBound(runs, 1e8)!;
  assert.equal(p.bound, 300);
  // Shares 0.9, 0.8, 0.8: the median of the runs' own shares, not 290 ÷ 300 from the medians.
  assert.ok(Math.abs(p.share - 0.8) < 1e-12);
  assert.equal(pairedBound([{ tps: 100 }], 1e8), null);
  assert.equal(pairedBound(runs, 0), null);
});
