// The training jobs as a library (src/recipes/languageModelJob.ts, resumeJob.ts): the loop
// `toy train` runs, called from code. A tiny from-scratch run through trainLanguageModel gives
// the CLI's losses; a run stopped right after a checkpoint (its caller threw) and continued with
// resumeTraining ends on exactly the uninterrupted run's losses and final weights; bad options
// are UsageErrors before any bundle exists. (The CLI's twin: test/train-runs.test.ts.)

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trainLanguageModel, resumeTraining, languageModelJob, LANGUAGE_MODEL_DEFAULTS, UsageError, type LanguageModelJobOptions } from "../src/index.js";
import { readGGUF } from "../src/io/gguf/reader.js";
import { events, losses, trainRun } from "./helpers/runs.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-train-job-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

const data = join(tmp, "data.txt");
writeFileSync(data, Array.from({ length: 200 }, (_, i) => `The cat ${i % 7} sat on the mat. The dog ran to the park.`).join("\n"));
const JOB = { recipe: "from-scratch", config: "nano", data, batch: 2, seq: 16, steps: 8, saveEvery: 2, evalEvery: 4, seed: 3 } as const satisfies LanguageModelJobOptions;

class Stop extends Error {}

const reference = await trainLanguageModel({ ...JOB, out: join(tmp, "ref") });

test("trainLanguageModel: a complete bundle, every step run", () => {
  assert.equal(reference.stepsRun, 8);
  assert.equal(reference.steps, 8);
  const ev = events(reference.bundle.dir);
  assert.equal(ev[0].event, "run_start");
  assert.equal(ev.at(-1)!.event, "run_end");
  assert.deepEqual(ev.filter((e) => e.event === "checkpoint").map((e) => e.step), [0, 2, 4, 6, 8]);
  assert.ok(existsSync(join(reference.bundle.weights, "final.gguf")));
});

test("trainLanguageModel runs the loop of toy train: the same losses as the CLI with the same flags", () => {
  const cli = trainRun(["from-scratch", "--config", "nano", "--data", data, "--batch", "2", "--seq", "16", "--steps", "8", "--save-every", "2", "--eval-every", "4", "--seed", "3", "--json"], join(tmp, "cli"));
  assert.deepEqual(losses(cli), losses(reference.bundle.dir));
  const evals = (dir: string) => events(dir).filter((e) => e.event === "eval").map((e) => [e.step, e.val_loss]);
  assert.deepEqual(evals(cli), evals(reference.bundle.dir));
});

test("a library run stopped after its step-4 checkpoint resumes to the uninterrupted losses and weights", async () => {
  const out = join(tmp, "stopped");
  const stopAt4 = { event: (line: string) => { const e = JSON.parse(line); if (e.event === "checkpoint" && e.step === 4) throw new Stop(); } };
  await assert.rejects(trainLanguageModel({ ...JOB, out }, stopAt4), Stop);
  const dir = join(out, readdirSync(out)[0]);
  assert.ok(!existsSync(join(dir, "weights", "final.gguf")), "stopped before the end");
  const said: string[] = [];
  const r = await resumeTraining(dir, { say: (line) => said.push(line) });
  assert.equal(r.stepsRun, 4);
  assert.equal(r.bundle.dir, dir);
  assert.ok(said.some((l) => l.startsWith(`resuming ${dir} at step 4/8`)), said.join("\n"));
  assert.deepEqual(losses(dir), losses(reference.bundle.dir));
  const a = readGGUF(join(dir, "weights", "final.gguf")), b = readGGUF(join(reference.bundle.weights, "final.gguf"));
  for (const info of a.tensors) assert.deepEqual(a.tensorBytes(info), b.tensorBytes(b.tensor(info.name)!), info.name);
  // A finished run is left as it is.
  const again = await resumeTraining(dir);
  assert.equal(again.stepsRun, 0);
  assert.deepEqual(losses(dir), losses(reference.bundle.dir));
});

test("languageModelJob fills what the caller left out with the recipe's defaults", () => {
  const j = languageModelJob({ recipe: "warm-start", model: "m.gguf", data, lr: undefined });
  assert.equal(j.lr, LANGUAGE_MODEL_DEFAULTS["warm-start"].lr);
  assert.equal(j.seq, LANGUAGE_MODEL_DEFAULTS["warm-start"].seq);
  assert.equal(j.out, "runs");
  const l = languageModelJob({ recipe: "lora", model: "m.gguf", data, rank: 4 });
  assert.deepEqual([l.rank, l.alpha, l.targets], [4, 16, ["attn_q", "attn_v"]]);
  assert.equal(languageModelJob({ recipe: "from-scratch" }).config, "small");
});

test("bad job options are UsageErrors, and leave no bundle behind", async () => {
  const out = join(tmp, "bad");
  await assert.rejects(trainLanguageModel({ recipe: "warm-start", data, out }), (e) => e instanceof UsageError && /needs --model PATH/.test(e.message));
  await assert.rejects(trainLanguageModel({ recipe: "lora", model: "x.gguf", out }), (e) => e instanceof UsageError && /needs --ids FILE or --data FILE/.test(e.message));
  await assert.rejects(trainLanguageModel({ ...JOB, config: "huge", out }), (e) => e instanceof UsageError && /--config huge: unknown/.test(e.message));
  await assert.rejects(trainLanguageModel({ ...JOB, ids: data, out }), (e) => e instanceof UsageError && /at most one of/.test(e.message));
  await assert.rejects(resumeTraining(join(tmp, "nowhere")), (e) => e instanceof UsageError && /no such run folder/.test(e.message));
  assert.ok(!existsSync(out), "no bundle folder");
});
