// Training against PyTorch: for every model in refs/train, the losses of 5 AdamW steps on the
// reference batch and the step-0 gradients (per-tensor L2 norms and sampled values), through
// the library (warmStart recipe) and, for two models, through `toy train warm-start --json`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadModel } from "../src/archs/index.js";
import { lossAndGradients } from "../src/train/objectives.js";
import { warmStart } from "../src/recipes/warmStart.js";
import { fixtures } from "./helpers/fixtures.js";
import { cpuBackend, type Device } from "../src/backends/index.js";
import { toy } from "./helpers/cli.js";

interface TrainRef {
  batch: { input: number[]; target: number[] };
  losses: number[];
  grads_step0: Record<string, { shape: number[]; l2: number; samples: [number, number][] }>;
}

const MODELS = ["stories260K", "llama-tiny", "llama3-tiny", "qwen2-tiny", "qwen3-tiny", "gemma2-tiny", "olmoe-tiny", "gpt2-tiny"];
const OPTIONS = { steps: 5, lr: 1e-3, betas: [0.9, 0.95] as [number, number], eps: 1e-8, weightDecay: 0.1, schedule: "constant" as const, warmup: 0, clip: 0, accum: 1, seed: 0 };
const fx = fixtures();
const readRef = (m: string): TrainRef => JSON.parse(readFileSync(join(fx.dir, "refs", "train", `${m}.json`), "utf8"));
const modelPath = (m: string) => join(fx.dir, "models", `${m}.gguf`);
const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

function checkLosses(m: string, losses: number[], ref: TrainRef): void {
  assert.equal(losses.length, ref.losses.length);
  assert.ok(rel(losses[0], ref.losses[0]) <= 1e-4, `${m}: step-0 loss ${losses[0]} vs PyTorch ${ref.losses[0]}`);
  losses.forEach((l, i) => assert.ok(rel(l, ref.losses[i]) <= 1e-3, `${m}: loss at step ${i}: ${l} vs PyTorch ${ref.losses[i]}`));
}

function checkGradients(m: string, grads: Map<string, Float32Array>, ref: TrainRef): void {
  assert.deepEqual([...grads.keys()].sort(), Object.keys(ref.grads_step0).sort(), `${m}: the trainable tensors are PyTorch's`);
  for (const [name, r] of Object.entries(ref.grads_step0)) {
    const g = grads.get(name)!;
    assert.equal(g.length, r.shape.reduce((a, b) => a * b, 1), `${m} ${name}: size`);
    let ss = 0;
    for (const x of g) ss += x * x;
    assert.ok(rel(Math.sqrt(ss), r.l2) <= 1e-3, `${m} ${name}: gradient L2 ${Math.sqrt(ss)} vs PyTorch ${r.l2}`);
    // A sampled value matches to 1e-2 relative, or to 1e-3 of the tensor's RMS gradient when it is tiny.
    const rms = r.l2 / Math.sqrt(g.length);
    for (const [i, v] of r.samples) {
      assert.ok(Math.abs(g[i] - v) <= 1e-2 * Math.abs(v) + 1e-3 * rms, `${m} ${name}[${i}]: gradient ${g[i]} vs PyTorch ${v}`);
    }
  }
}

const cpu = cpuBackend();
const BACKENDS: [Device, string | false][] = [["ts", false], ["cpu", "error" in cpu ? `no native backend (${cpu.error})` : false]];

for (const m of MODELS) for (const [backend, noBackend] of BACKENDS) {
  test(`${m}: warm-start on ${backend} matches PyTorch (5 AdamW losses, step-0 gradients)`, { skip: fx.skip || noBackend }, () => {
    const ref = readRef(m);
    const run = warmStart.realize(modelPath(m), { ...OPTIONS, backend });
    const T = ref.batch.input.length;
    const batch = { input: Int32Array.from(ref.batch.input), target: Int32Array.from(ref.batch.target), batch: 1, seq: T };
    const losses: number[] = [];
    for (let s = 0; s < 5; s++) {
      const r = run.step(batch);
      if (s === 0) checkGradients(m, r.grads, ref);
      losses.push(r.loss);
    }
    checkLosses(m, losses, ref);
  });
}

test("gradient accumulation: two identical micro-batches give the one-batch gradient", { skip: fx.skip }, () => {
  const ref = readRef("llama3-tiny");
  const T = ref.batch.input.length;
  const batch = { input: Int32Array.from(ref.batch.input), target: Int32Array.from(ref.batch.target), batch: 1, seq: T };
  const a = warmStart.realize(modelPath("llama3-tiny"), { ...OPTIONS, accum: 2 }).step([batch, batch]);
  const one = warmStart.realize(modelPath("llama3-tiny"), OPTIONS);
  const b = lossAndGradients(one.config, one.params, batch, one.trainer.setup);
  assert.ok(rel(a.loss, b.loss) < 1e-6);
  for (const [name, g] of b.grads) g.forEach((x, i) => assert.ok(Math.abs(a.grads.get(name)![i] - x) <= 1e-6 * (Math.abs(x) + 1e-3), name));
});

test("a batch of two sequences scores each on its own (mean of the two losses)", { skip: fx.skip }, () => {
  const ref = readRef("qwen3-tiny");
  const run = warmStart.realize(modelPath("qwen3-tiny"), OPTIONS);
  const T = 16;
  const seq = (o: number) => ({ input: Int32Array.from(ref.batch.input.slice(o, o + T)), target: Int32Array.from(ref.batch.target.slice(o, o + T)), batch: 1, seq: T });
  const [s0, s1] = [seq(0), seq(16)];
  const both = { input: Int32Array.from([...s0.input, ...s1.input]), target: Int32Array.from([...s0.target, ...s1.target]), batch: 2, seq: T };
  const l = (b: typeof both) => lossAndGradients(run.config, run.params, b).loss;
  assert.ok(rel(l(both), (l(s0) + l(s1)) / 2) < 1e-6);
});

for (const m of ["llama3-tiny", "olmoe-tiny"]) {
  test(`toy train warm-start --ids … --json reproduces PyTorch (${m}) and writes a run bundle`, { skip: fx.skip }, () => {
    const ref = readRef(m);
    const dir = mkdtempSync(join(tmpdir(), "toy-train-"));
    try {
      const ids = join(dir, "ids.json");
      writeFileSync(ids, JSON.stringify([...ref.batch.input, ref.batch.target.at(-1)]));
      const r = toy(["train", "warm-start", "--model", modelPath(m), "--ids", ids, "--steps", "5", "--lr", "1e-3", "--betas", "0.9,0.95",
        "--eps", "1e-8", "--weight-decay", "0.1", "--schedule", "constant", "--warmup", "0", "--clip", "0", "--json", "--out", join(dir, "runs")]);
      assert.equal(r.status, 0, r.stderr);
      const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
      assert.ok(events.every((e) => e.schema === "toy/v1"));
      assert.deepEqual(events.map((e) => e.event), ["run_start", "step", "step", "step", "step", "step", "checkpoint", "run_end"]);
      const start = events[0];
      assert.equal(start.seed, 0);
      assert.equal(start.backend, "error" in cpu ? "ts" : "cpu", "the default backend: cpu when it built");
      assert.ok(start.config.arch && start.versions.toy && start.versions.node);
      const steps = events.filter((e) => e.event === "step");
      for (const s of steps) for (const k of ["step", "loss", "lr", "grad_norm", "tokens_per_s"]) assert.equal(typeof s[k], "number", k);
      checkLosses(m, steps.map((s) => s.loss), ref);
      // The bundle: the same events on disk, and a final checkpoint that loads and runs.
      const bundle = join(dir, "runs", start.run_id);
      const onDisk = readFileSync(join(bundle, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      assert.deepEqual(onDisk.map((e) => e.loss), events.map((e) => e.loss));
      assert.deepEqual(readdirSync(join(bundle, "weights")).filter((f) => f.endsWith(".gguf")), ["final.gguf"]);
      const trained = loadModel(join(bundle, "weights", "final.gguf"), "ts");
      const T = ref.batch.input.length;
      const logits = trained.forward(Int32Array.from(ref.batch.input), trained.newCache(T), "all");
      let nll = 0;
      for (let t = 0; t < T; t++) {
        const row = logits.data.subarray(t * trained.nVocab, (t + 1) * trained.nVocab);
        const max = row.reduce((a, b) => Math.max(a, b), -Infinity);
        nll += Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0)) + max - row[ref.batch.target[t]];
      }
      assert.ok(nll / T < ref.losses[4], `the saved weights score the batch at ${nll / T}, below the last training loss ${ref.losses[4]}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("toy train warm-start: usage errors exit 2", { skip: fx.skip }, () => {
  assert.equal(toy(["train", "warm-start", "--ids", "/nonexistent.json"]).status, 2, "no --model");
  assert.equal(toy(["train", "warm-start", "--model", modelPath("llama3-tiny")]).status, 2, "neither --ids nor --data");
  assert.equal(toy(["train", "warm-start", "--model", modelPath("llama3-tiny"), "--ids", "/nonexistent.json"]).status, 2, "unreadable --ids");
});
