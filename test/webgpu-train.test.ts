// Training on the webgpu backend, end to end (llvmpipe in CI; skipped, visibly, without an
// adapter): the PyTorch warm-start references (5 AdamW losses and the step-0 gradients, with
// train.test.ts's bounds) for the tiny fixtures; a LoRA run against the same run on ts; `toy
// train --backend webgpu` from the command line; and the same bits from two runs. The
// large-vocabulary fixtures (gemma2: soft-cap, window, GeGLU; gpt2: LayerNorm, biases) run with
// TOY_SLOW=1; their ops are tested in webgpu-train-kernels.test.ts either way. And a tiny ViT's
// loss and gradients against ts (it needs no fixtures).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lora } from "../src/recipes/lora.js";
import { warmStart } from "../src/recipes/warmStart.js";
import { fixtures } from "./helpers/fixtures.js";
import { toy } from "./helpers/cli.js";
import { webgpuTrainSkip } from "./helpers/webgpu.js";
import { trainKernelsFor, tsTrainKernels } from "../src/autograd/kernels/index.js";
import type { VitConfig } from "../src/archs/vitConfig.js";
import { Rng } from "../src/data/rng.js";
import { parseGGUF } from "../src/io/gguf/reader.js";
import { initialVitBytes } from "../src/recipes/vitTiny.js";
import { imageClassification } from "../src/train/objectives.js";
import { parametersFromFile } from "../src/train/params.js";

interface TrainRef {
  batch: { input: number[]; target: number[] };
  losses: number[];
  grads_step0: Record<string, { shape: number[]; l2: number; samples: [number, number][] }>;
}

const fx = fixtures();
const noGpu = webgpuTrainSkip();
const skip = fx.skip || noGpu;
/** The fixtures whose reference runs are quick on llvmpipe (≤ 5 s each), and those with large
 *  vocabularies (32,000 to 256,000 logits a token: ~20 s each there), run with TOY_SLOW=1. */
const MODELS = ["stories260K", "llama3-tiny", "qwen2-tiny", "qwen3-tiny", "olmoe-tiny"];
const SLOW_MODELS = ["llama-tiny", "gemma2-tiny", "gpt2-tiny"];
const slow = process.env.TOY_SLOW === "1" ? false : "SKIPPED: large-vocabulary fixtures take ~20 s each on llvmpipe; set TOY_SLOW=1 to run them";
const OPTIONS = { steps: 5, lr: 1e-3, betas: [0.9, 0.95] as [number, number], eps: 1e-8, weightDecay: 0.1, schedule: "constant" as const, warmup: 0, clip: 0, accum: 1, seed: 0 };
const readRef = (m: string): TrainRef => JSON.parse(readFileSync(join(fx.dir, "refs", "train", `${m}.json`), "utf8"));
const modelPath = (m: string) => join(fx.dir, "models", `${m}.gguf`);
const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);
const batchOf = (ref: TrainRef) => ({ input: Int32Array.from(ref.batch.input), target: Int32Array.from(ref.batch.target), batch: 1, seq: ref.batch.input.length });

// The bounds of train.test.ts (PyTorch sums in float32 in its own order, as webgpu does in another).
function checkLosses(m: string, losses: number[], ref: TrainRef): void {
  assert.equal(losses.length, ref.losses.length);
  assert.ok(rel(losses[0], ref.losses[0]) <= 1e-4, `${m}: step-0 loss ${losses[0]} vs PyTorch ${ref.losses[0]}`);
  losses.forEach((l, i) => assert.ok(rel(l, ref.losses[i]) <= 1e-3, `${m}: loss at step ${i}: ${l} vs PyTorch ${ref.losses[i]}`));
}

function checkGradients(m: string, grads: Map<string, Float32Array>, ref: TrainRef): void {
  assert.deepEqual([...grads.keys()].sort(), Object.keys(ref.grads_step0).sort(), `${m}: the trainable tensors are PyTorch's`);
  for (const [name, r] of Object.entries(ref.grads_step0)) {
    const g = grads.get(name)!;
    let ss = 0;
    for (const x of g) ss += x * x;
    assert.ok(rel(Math.sqrt(ss), r.l2) <= 1e-3, `${m} ${name}: gradient L2 ${Math.sqrt(ss)} vs PyTorch ${r.l2}`);
    const rms = r.l2 / Math.sqrt(g.length);
    for (const [i, v] of r.samples) {
      assert.ok(Math.abs(g[i] - v) <= 1e-2 * Math.abs(v) + 1e-3 * rms, `${m} ${name}[${i}]: gradient ${g[i]} vs PyTorch ${v}`);
    }
  }
}

for (const m of [...MODELS, ...SLOW_MODELS]) {
  test(`${m}: warm-start on webgpu matches PyTorch (5 AdamW losses, step-0 gradients)`, { skip: skip || (SLOW_MODELS.includes(m) && slow) }, () => {
    const ref = readRef(m);
    const run = warmStart.realize(modelPath(m), { ...OPTIONS, backend: "webgpu" });
    const losses: number[] = [];
    for (let s = 0; s < 5; s++) {
      const r = run.step(batchOf(ref));
      if (s === 0) checkGradients(m, r.grads, ref);
      losses.push(r.loss);
    }
    checkLosses(m, losses, ref);
  });
}

test("LoRA on webgpu follows the same run on ts (3 steps), and two webgpu runs give the same bits", { skip }, () => {
  const ref = readRef("llama3-tiny");
  const runOn = (backend: "ts" | "webgpu") => {
    const run = lora.realize(modelPath("llama3-tiny"), { ...OPTIONS, backend, rank: 4, alpha: 8, targets: ["attn_q", "attn_v", "ffn_down"] });
    const steps = [0, 1, 2].map(() => run.step(batchOf(ref)));
    const grads = [...steps[2].grads].map(([name, g]) => `${name}:${Buffer.from(g.buffer, g.byteOffset, g.byteLength).toString("base64")}`);
    return { losses: steps.map((r) => r.loss), grads };
  };
  const ts = runOn("ts"), a = runOn("webgpu"), b = runOn("webgpu");
  a.losses.forEach((l, i) => assert.ok(rel(l, ts.losses[i]) <= 1e-4, `LoRA loss at step ${i}: webgpu ${l} vs ts ${ts.losses[i]}`));
  assert.ok(a.losses[2] < a.losses[0], `LoRA lowers the loss: ${a.losses}`);
  assert.deepEqual(b.losses, a.losses, "two webgpu runs: the same losses");
  assert.ok(a.grads.length > 0 && a.grads.every((g) => g.includes(".lora_")), "the gradients are the adapters'");
  assert.deepEqual(b.grads, a.grads, "two webgpu runs: the same gradients at step 2 (after two updates), bit for bit");
});

test("toy train warm-start --backend webgpu --json reproduces PyTorch (stories260K)", { skip }, () => {
  const ref = readRef("stories260K");
  const dir = mkdtempSync(join(tmpdir(), "toy-train-webgpu-"));
  try {
    const ids = join(dir, "ids.json");
    writeFileSync(ids, JSON.stringify([...ref.batch.input, ref.batch.target.at(-1)]));
    const r = toy(["train", "warm-start", "--backend", "webgpu", "--model", modelPath("stories260K"), "--ids", ids, "--steps", "5", "--lr", "1e-3",
      "--betas", "0.9,0.95", "--eps", "1e-8", "--weight-decay", "0.1", "--schedule", "constant", "--warmup", "0", "--clip", "0", "--json", "--out", join(dir, "runs")]);
    assert.equal(r.status, 0, r.stderr);
    const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(events[0].backend, "webgpu");
    checkLosses("stories260K", events.filter((e) => e.event === "step").map((e) => e.loss), ref);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** 1×6×4 images in 2×2 patches (T = 7), d 8 in 2 heads, 3 classes: vit.test.ts's tiny ViT. */
const TINY_VIT: VitConfig = {
  arch: "vit", channels: 1, height: 6, width: 4, patchSize: 2, nEmbd: 8, nLayer: 2, nHead: 2, headDim: 4, nFF: 12, nClasses: 3, normEps: Math.fround(1e-6),
};

test("ViT training forward on webgpu agrees with ts (loss and every gradient; bidirectional attention, LayerNorm)", { skip: noGpu }, () => {
  const params = parametersFromFile(parseGGUF(initialVitBytes(TINY_VIT, 2, ["a", "b", "c"], null), "<tiny>"));
  const rng = new Rng(102);
  for (const v of params.values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.3 * rng.normal();
  const B = 4, batch = {
    pixels: Float32Array.from({ length: B * 24 }, () => rng.normal()),
    labels: Int32Array.from({ length: B }, () => Math.floor(rng.next() * 3)),
    size: B,
  };
  const objective = imageClassification(TINY_VIT);
  const a = objective.lossAndGradients(params, batch, { kernels: tsTrainKernels });
  const b = objective.lossAndGradients(params, batch, { kernels: trainKernelsFor("webgpu") });
  assert.ok(Math.abs(a.loss - b.loss) < 1e-5, `loss ${a.loss} vs ${b.loss}`);
  for (const [name, g] of a.grads) {
    const h = b.grads.get(name)!;
    let diff = 0, ref = 0;
    for (let i = 0; i < g.length; i++) { diff += (g[i] - h[i]) ** 2; ref += g[i] ** 2; }
    assert.ok(Math.sqrt(diff) <= 1e-4 * Math.max(Math.sqrt(ref), 1e-3), `${name}: webgpu and ts gradients differ by ${Math.sqrt(diff)}`);
  }
});
