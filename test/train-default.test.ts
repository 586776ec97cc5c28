// The README's main job: `toy train from-scratch` with no arguments trains on the shipped corpus,
// writes a complete run bundle, and `toy infer runs/<id>` then writes clearly better text than
// the untrained model did. On the ts backend the flags left at their defaults shrink to the
// tiny run (the cpu-sized one would take hours there).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuBackend } from "../src/backends/index.js";
import { defaultCorpusPath } from "../src/io/runs/index.js";
import { events, runDir } from "./helpers/runs.js";
import { toy } from "./helpers/cli.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-train-default-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const noCpu = "error" in cpuBackend() ? "SKIPPED: the native cpu backend did not build; the default run is sized for it" : false;

/** How many of a text's words are words of the corpus: the untrained model's bytes make few. */
function corpusWords(text: string): number {
  const known = new Set(readFileSync(defaultCorpusPath(), "utf8").toLowerCase().match(/[a-z]+/g));
  return (text.toLowerCase().match(/[a-z]+/g) ?? []).filter((w) => w.length > 1 && known.has(w)).length;
}

test("toy train from-scratch with no arguments: a complete bundle, and a model that writes the corpus' words", { skip: noCpu }, () => {
  const out = join(tmp, "runs");
  const r = toy(["train", "from-scratch", "--json", "--out", out], { timeout: 600_000 });
  assert.equal(r.status, 0, r.stderr);
  const dir = runDir(out), ev = events(dir);
  assert.equal(ev[0].event, "run_start");
  assert.equal(ev[0].backend, "cpu");
  assert.equal(ev[0].config.nEmbd, 128, "the default config on cpu is small");
  assert.equal(ev.at(-1)!.event, "run_end");
  const evals = ev.filter((e) => e.event === "eval");
  assert.equal(evals[0].step, 0);
  assert.equal(evals.at(-1)!.step, 600);
  assert.ok(evals.at(-1)!.val_loss < evals[0].val_loss / 4, `validation loss ${evals[0].val_loss} → ${evals.at(-1)!.val_loss}`);
  for (const f of ["loss.svg", "weights/final.gguf", "weights/step-0.gguf"]) assert.ok(existsSync(join(dir, f)), f);

  const write = (model: string) => {
    const g = toy(["infer", model, "--prompt", "Once upon a time", "--max-tokens", "120", "--temperature", "0"]);
    assert.equal(g.status, 0, g.stderr);
    return g.stdout;
  };
  const trained = write(dir), untrained = write(join(dir, "weights", "step-0.gguf"));
  assert.ok(corpusWords(trained) >= 12 && corpusWords(trained) > 3 * corpusWords(untrained),
    `trained: ${JSON.stringify(trained)}\nuntrained: ${JSON.stringify(untrained)}`);
});

test("toy train from-scratch --backend ts: the defaults the user did not set are the tiny run's", () => {
  const out = join(tmp, "ts");
  const r = toy(["train", "from-scratch", "--backend", "ts", "--steps", "2", "--seq", "16", "--json", "--out", out]);
  assert.equal(r.status, 0, r.stderr);
  const ev = events(runDir(out));
  assert.equal(ev[0].backend, "ts");
  assert.equal(ev[0].config.nEmbd, 64, "tiny");
  const steps = ev.filter((e) => e.event === "step");
  assert.equal(steps.length, 2, "--steps as given");
  assert.equal(steps[0].tokens, 4 * 16, "the ts default --batch 4, and --seq 16 as given");
});
