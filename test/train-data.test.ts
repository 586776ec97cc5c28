// Pre-tokenized training data (`--data FILE.bin|.u16|.u32`, `--data-format`): the same ids as a
// text, written as uint16 or as uint32, train to the same losses as the text; a resumed run on
// an id file continues onto the same windows; bad files fail with exit 2 and say what is wrong.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuBackend } from "../src/backends/index.js";
import { dataFormatOf } from "../src/io/runs/corpus.js";
import { readTokenFile } from "../src/io/runs/tokenFile.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { fromScratch } from "../src/recipes/fromScratch.js";
import { toy } from "./helpers/cli.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-train-data-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

const text = Array.from({ length: 120 }, (_, i) => `The cat ${i % 7} sat on the mat. The dog ran to the park.`).join("\n");
const textPath = join(tmp, "data.txt");
writeFileSync(textPath, text);
// The ids the text path trains on: the from-scratch model's tokenizer over the whole text.
const ids = tokenizerFromMetadata(fromScratch.realize("nano").source.metadata, "<scratch>").encode(text);
const u16Path = join(tmp, "train.bin"), u32Path = join(tmp, "train.u32");
writeFileSync(u16Path, new Uint8Array(Uint16Array.from(ids).buffer));
writeFileSync(u32Path, new Uint8Array(Uint32Array.from(ids).buffer));

const ARGS = ["from-scratch", "--config", "nano", "--batch", "2", "--seq", "16", "--steps", "6", "--save-every", "2", "--eval-every", "3", "--seed", "4", "--json"];
type Event = Record<string, any>;
const events = (dir: string): Event[] => readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
const losses = (dir: string) => events(dir).filter((e) => e.event === "step" || e.event === "eval").map((e) => [e.event, e.step, e.loss ?? e.val_loss]);

function train(name: string, extra: string[]): string {
  const out = join(tmp, name);
  const r = toy(["train", ...ARGS, "--out", out, ...extra]);
  assert.equal(r.status, 0, r.stderr);
  return join(out, readdirSync(out)[0]);
}

const fromText = train("text", ["--data", textPath]);

test("uint16 and uint32 files of the text's ids train to the text's losses, bit for bit", () => {
  const u16 = train("u16", ["--data", u16Path]), u32 = train("u32", ["--data", u32Path]);
  assert.ok(losses(fromText).length >= 8);
  assert.deepEqual(losses(u16), losses(fromText));
  assert.deepEqual(losses(u32), losses(fromText));
  assert.equal(events(u16)[0].data_format, "u16");
  assert.equal(events(u32)[0].data_format, "u32");
  assert.equal(events(fromText)[0].data_format, "text");
  // --data-format overrides the extension: the same uint16 bytes under another name.
  const renamed = join(tmp, "ids.dat");
  writeFileSync(renamed, readFileSync(u16Path));
  assert.deepEqual(losses(train("renamed", ["--data", renamed, "--data-format", "u16"])), losses(fromText));
});

test("a run on an id file resumes onto the same windows", () => {
  const dir = train("resume", ["--data", u16Path]);
  // Back to the step-4 checkpoint, as if the run had stopped there.
  const w = join(dir, "weights");
  for (const f of readdirSync(w)) if (/^(final|step-6)\./.test(f)) unlinkSync(join(w, f));
  const r = toy(["train", "--resume", dir]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(events(dir).filter((e) => e.event === "resume").map((e) => e.step), [4]);
  assert.deepEqual(losses(dir), losses(fromText));
});

test("readTokenFile: a view over the file's bytes, mapped or read", () => {
  const read = readTokenFile(u16Path, "u16", 260);
  assert.ok(read instanceof Uint16Array);
  assert.deepEqual([...read], ids);
  const cpu = cpuBackend();
  if ("error" in cpu) { console.warn(`SKIPPED the memory-mapped half: ${cpu.error}`); return; }
  const mapped = readTokenFile(u32Path, "u32", 260, cpu.mapFile);
  assert.ok(mapped instanceof Uint32Array);
  assert.deepEqual([...mapped], ids);
});

test("the format comes from --data-format, else the extension", () => {
  assert.equal(dataFormatOf("a/train.bin", undefined, 50257), "u16");
  assert.equal(dataFormatOf("a/train.u16", undefined, 50257), "u16");
  assert.equal(dataFormatOf("a/train.U32", undefined, 50257), "u32");
  assert.equal(dataFormatOf("a/train.txt", undefined, 50257), "text");
  assert.equal(dataFormatOf("a/train", undefined, 50257), "text");
  assert.equal(dataFormatOf("a/train.bin", "u32", 50257), "u32");
  assert.equal(dataFormatOf("a/train.u32", "text", 128256), "text");
  // Past 65,536 ids a .bin could be either width: the flag is required.
  assert.throws(() => dataFormatOf("a/train.bin", undefined, 128256), /does not fit in uint16.*--data-format u16\|u32/);
  assert.equal(dataFormatOf("a/train.bin", "u32", 128256), "u32");
});

test("bad id files fail with exit 2, a message that says what is wrong, and no run left behind", () => {
  const fail = (name: string, bytes: Uint8Array | null, pattern: RegExp, extra: string[] = []) => {
    const path = join(tmp, name);
    if (bytes) writeFileSync(path, bytes);
    const out = join(tmp, `bad-${name}`);
    const r = toy(["train", ...ARGS, "--data", path, "--out", out, ...extra]);
    assert.equal(r.status, 2, `${name}: exit ${r.status}: ${r.stderr}`);
    assert.match(r.stderr, pattern, name);
    assert.ok(!existsSync(out) || readdirSync(out).length === 0, `${name}: no run bundle`);
  };
  // A size that is not a whole number of ids.
  fail("odd.bin", new Uint8Array(2 * 100 + 1), /odd\.bin: 201 bytes is not a whole number of u16 token ids \(2 bytes each\)/);
  fail("odd.u32", new Uint8Array(4 * 100 + 2), /odd\.u32: 402 bytes is not a whole number of u32 token ids \(4 bytes each\)/);
  // An id past the vocabulary: the file, the position (token and byte offset), the id, the vocabulary.
  const big = Uint16Array.from(ids); big[1234] = 999;
  fail("big.bin", new Uint8Array(big.buffer), /big\.bin: token id 999 at token 1234 \(byte offset 2468\) is not below the model's vocabulary size 260/);
  const big32 = Uint32Array.from(ids); big32[77] = 70000;
  fail("big.u32", new Uint8Array(big32.buffer), /big\.u32: token id 70000 at token 77 \(byte offset 308\) is not below the model's vocabulary size 260/);
  // uint16 bytes read as uint32 pair two ids into one huge id.
  fail("u16-as-u32.bin", new Uint8Array(Uint16Array.from(ids.slice(0, 1000)).buffer), /token id \d+ at token 0 \(byte offset 0\) is not below/, ["--data-format", "u32"]);
  // Too few tokens for one window of --seq 16, and an empty file.
  fail("short.bin", new Uint8Array(Uint16Array.from(ids.slice(0, 18)).buffer), /short\.bin: 18 tokens is too few for --seq 16/);
  fail("empty.u16", new Uint8Array(0), /empty\.u16: 0 tokens is too few for --seq 16/);
});

test("--data-format needs --data, and takes only text, u16 or u32", () => {
  const r = toy(["train", ...ARGS, "--data-format", "u16", "--out", join(tmp, "noflag")]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--data-format says how --data FILE is read/);
  const c = toy(["train", ...ARGS, "--data", u16Path, "--data-format", "u8", "--out", join(tmp, "u8")]);
  assert.equal(c.status, 2);
  assert.match(c.stderr, /Allowed choices are text, u16, u32/);
  const missing = toy(["train", ...ARGS, "--data", join(tmp, "nope.bin"), "--out", join(tmp, "nope")]);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /nope\.bin: cannot read \(ENOENT\)/);
});
