// Run bundles of `toy train`: from-scratch with a tiny config writes events.jsonl (toy/v1),
// loss.svg and GGUF checkpoints that `toy infer runs/<id>` loads; the same seed gives the same
// losses (for 1 and 2 threads); a run killed with SIGKILL at a checkpoint, or with a checkpoint
// half written, resumes (`toy train --resume`) to exactly the losses of an uninterrupted run.

import { test } from "node:test";
import { cpuBackend } from "../src/backends/index.js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromScratch } from "../src/recipes/fromScratch.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { readGGUF } from "../src/io/gguf/reader.js";
import { events, losses, runDir, trainRun } from "./helpers/runs.js";
import { toy, toyBin } from "./helpers/cli.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-train-runs-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

// A small text of our own, so the tests do not depend on the shipped corpus's size.
const data = join(tmp, "data.txt");
writeFileSync(data, Array.from({ length: 200 }, (_, i) => `The cat ${i % 7} sat on the mat. The dog ran to the park.`).join("\n"));
const ARGS = ["--config", "nano", "--data", data, "--batch", "2", "--seq", "16", "--steps", "8", "--save-every", "2", "--eval-every", "4", "--seed", "3", "--json"];


const train = (out: string, env: Record<string, string> = {}): string => trainRun(["from-scratch", ...ARGS], out, env);

const reference = train(join(tmp, "ref"));

test("fromScratch.realize: seeded init (norms 1, std 0.02) over the byte vocabulary", () => {
  const a = fromScratch.realize("nano", { seed: 5 }), b = fromScratch.realize("nano", { seed: 5 }), c = fromScratch.realize("nano", { seed: 6 });
  assert.deepEqual(a.params.values.get("blk.0.attn_q.weight"), b.params.values.get("blk.0.attn_q.weight"));
  assert.notDeepEqual(a.params.values.get("blk.0.attn_q.weight"), c.params.values.get("blk.0.attn_q.weight"));
  assert.ok(a.params.values.get("output_norm.weight")!.every((x) => x === 1));
  const w = a.params.values.get("token_embd.weight")!;
  const std = Math.sqrt(w.reduce((s, x) => s + x * x, 0) / w.length);
  assert.ok(Math.abs(std - 0.02) < 0.002, `std ${std}`);
  assert.equal(a.config.nVocab, 260);
  const tok = tokenizerFromMetadata(a.source.metadata, "<scratch>");
  const text = "Hello, wörld!\n";
  assert.equal(tok.decode(tok.encode(text, { addBos: false })), text);
});

test("toy train from-scratch writes a complete run bundle", () => {
  const ev = events(reference);
  const start = ev[0];
  assert.equal(start.schema, "toy/v1");
  assert.equal(start.event, "run_start");
  assert.equal(start.seed, 3);
  assert.equal(start.backend, "error" in cpuBackend() ? "ts" : "cpu", "the default backend: cpu when it built");
  assert.equal(start.config.nEmbd, 32);
  assert.ok(start.versions.toy && start.versions.node);
  const steps = ev.filter((e) => e.event === "step");
  assert.deepEqual(steps.map((e) => e.step), [0, 1, 2, 3, 4, 5, 6, 7]);
  for (const e of steps) for (const k of ["loss", "lr", "grad_norm", "tokens_per_s"]) assert.equal(typeof e[k], "number", k);
  assert.deepEqual(ev.filter((e) => e.event === "eval").map((e) => e.step), [0, 4, 8]);
  assert.deepEqual(ev.filter((e) => e.event === "checkpoint").map((e) => e.step), [0, 2, 4, 6, 8]);
  assert.equal(ev.at(-1)!.event, "run_end");
  const evals = ev.filter((e) => e.event === "eval");
  assert.ok(evals.at(-1)!.val_loss < evals[0].val_loss, "validation loss falls");
  for (const f of ["step-2.gguf", "step-2.optim.bin", "step-2.state.json", "final.gguf", "final.state.json"]) assert.ok(existsSync(join(reference, "weights", f)), f);
  assert.ok(!readdirSync(join(reference, "weights")).some((f) => f.endsWith(".tmp")), "no temporary files left");
  assert.match(readFileSync(join(reference, "loss.svg"), "utf8"), /^<svg[\s\S]*<path[\s\S]*<\/svg>\n$/);
  const file = readGGUF(join(reference, "weights", "final.gguf"));
  assert.equal(file.metadata.get("general.architecture"), "llama");
  assert.equal((file.metadata.get("tokenizer.ggml.tokens") as string[]).length, 260);
});

test("toy infer runs/<id> loads the run's latest checkpoint", () => {
  const r = toy(["infer", reference, "--prompt", "The cat", "--max-tokens", "8", "--temperature", "0", "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.tokens.length > 0, true);
  assert.equal(typeof out.text, "string");
  const e = toy(["infer", reference, "--prompt", "The cat", "--max-tokens", "8", "--temperature", "0", "--json"]);
  assert.deepEqual(JSON.parse(e.stdout).tokens, out.tokens);
});

test("the same seed gives the same losses, for 1 and 2 threads", () => {
  const one = train(join(tmp, "t1"), { TOY_THREADS: "1" }), two = train(join(tmp, "t2"), { TOY_THREADS: "2" });
  assert.deepEqual(losses(one), losses(reference));
  assert.deepEqual(losses(two), losses(reference));
});

/** Start a run and SIGKILL it as soon as it logs the checkpoint of `step`. */
function killAtCheckpoint(out: string, step: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [toyBin, "train", "from-scratch", ...ARGS, "--out", out], { stdio: ["ignore", "pipe", "pipe"] });
    let buf = "", killed = false;
    child.stdout.on("data", (d) => {
      buf += d;
      if (!killed && buf.split("\n").some((l) => l.includes('"event":"checkpoint"') && l.includes(`"step":${step},`))) { killed = true; child.kill("SIGKILL"); }
    });
    child.on("close", (_code, signal) => {
      if (signal !== "SIGKILL") reject(new Error(`the run ended before the step-${step} checkpoint (${signal})`));
      else resolve(runDir(out));
    });
  });
}

test("a run killed with SIGKILL at a checkpoint resumes to the uninterrupted losses", async () => {
  const dir = await killAtCheckpoint(join(tmp, "kill"), 4);
  assert.ok(!existsSync(join(dir, "weights", "final.gguf")), "killed before the end");
  const r = toy(["train", "--resume", dir]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(losses(dir), losses(reference));
  const ev = events(dir);
  assert.equal(ev.filter((e) => e.event === "run_start").length, 1);
  assert.equal(ev.filter((e) => e.event === "resume").length, 1);
  assert.equal(ev.at(-1)!.event, "run_end");
  assert.deepEqual(ev.filter((e) => e.event === "eval").map((e) => [e.step, e.val_loss]), events(reference).filter((e) => e.event === "eval").map((e) => [e.step, e.val_loss]));
  // The final weights are the uninterrupted run's, bit for bit.
  const a = readGGUF(join(dir, "weights", "final.gguf")), b = readGGUF(join(reference, "weights", "final.gguf"));
  for (const info of a.tensors) assert.deepEqual(a.tensorBytes(info), b.tensorBytes(b.tensor(info.name)!), info.name);
  // Resuming a finished run does nothing.
  assert.equal(toy(["train", "--resume", dir]).status, 0);
  assert.deepEqual(losses(dir), losses(reference));
});

test("a checkpoint killed mid-write is skipped: the run resumes from the last complete one", async () => {
  const dir = await killAtCheckpoint(join(tmp, "torn"), 4);
  const w = join(dir, "weights");
  // What a kill during the step-6 checkpoint can leave: a temporary file, a GGUF without its
  // state, and a state.json naming files whose sizes do not match.
  writeFileSync(join(w, "step-6.gguf.1234abcd.tmp"), "GGUF partial");
  writeFileSync(join(w, "step-6.gguf"), readFileSync(join(w, "step-4.gguf")).subarray(0, 1000));
  const state = JSON.parse(readFileSync(join(w, "step-4.state.json"), "utf8"));
  writeFileSync(join(w, "step-6.state.json"), JSON.stringify({ ...state, step: 6, gguf: "step-6.gguf", optimizer: "step-6.optim.bin" }));
  // A step event logged after the checkpoint, and a line cut short.
  writeFileSync(join(dir, "events.jsonl"), readFileSync(join(dir, "events.jsonl"), "utf8") + '{"schema":"toy/v1","event":"step","step":4,"loss":1}\n{"schema":"toy/v1","ev');
  const r = toy(["train", "--resume", dir]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(losses(dir), losses(reference));
});
