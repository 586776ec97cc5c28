// The Vision Transformer (#8): concatRows' backward; the training forward's gradients against
// finite differences and the cpu kernels against ts; the inference forward (archs/vit.ts) against
// the training forward; checkpoints as GGUF with the vit.* keys; `toy train vit` and `toy eval`
// on synthetic images (and, when ../shared/data/mnist is there, a short run that must learn).

import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { concatRows, sliceRows } from "../src/autograd/ops/index.js";
import { Tape } from "../src/autograd/tape.js";
import { tsTrainKernels, trainKernelsFor } from "../src/autograd/kernels/index.js";
import { loadVisionModel } from "../src/archs/vit.js";
import { vitConfigOf, type VitConfig } from "../src/archs/vitConfig.js";
import { cpuBackend } from "../src/backends/index.js";
import { Rng } from "../src/data/rng.js";
import { imageClassification, vitTrainingForward, type ImageBatchInput } from "../src/train/objectives.js";
import { parseGGUF, readGGUF } from "../src/io/gguf/reader.js";
import { initialVitBytes, vitConfigFor, vitTiny } from "../src/recipes/vitTiny.js";
import { parametersFromFile } from "../src/train/params.js";
import { encodeIdx, ImageBatches, loadMnistDir } from "../src/io/images/index.js";
import { readVitCard, renderVitCard } from "../src/card/vit.js";
import { gradChecker } from "./helpers/gradCheck.js";
import { events, losses, runDir, trainRun } from "./helpers/runs.js";
import { toy } from "./helpers/cli.js";
import { encode as encodePng } from "fast-png";
import { sharedData } from "./helpers/fixtures.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-vit-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const { gradCheck, t } = gradChecker(new Rng(8));
const cpu = cpuBackend();
const noCpu = "error" in cpu ? `the cpu backend did not build: ${cpu.error}` : false;

/** 1×6×4 images in 2×2 patches: n = 6, T = 7; d 8 in 2 heads; 3 classes. */
const TINY: VitConfig = {
  arch: "vit", channels: 1, height: 6, width: 4, patchSize: 2, nEmbd: 8, nLayer: 2, nHead: 2, headDim: 4, nFF: 12, nClasses: 3, normEps: Math.fround(1e-6),
};

function randomBatch(c: VitConfig, B: number, seed: number): ImageBatchInput {
  const rng = new Rng(seed);
  return {
    pixels: Float32Array.from({ length: B * c.channels * c.height * c.width }, () => rng.normal()),
    labels: Int32Array.from({ length: B }, () => Math.floor(rng.next() * c.nClasses)),
    size: B,
  };
}

/** The tiny model with every parameter (biases, class token, gains too) made random, so no gradient is trivially zero. */
function tinyModel(seed = 1) {
  const source = parseGGUF(initialVitBytes(TINY, seed, ["a", "b", "c"], null), "<tiny>");
  const params = parametersFromFile(source);
  const rng = new Rng(seed + 100);
  for (const v of params.values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.3 * rng.normal();
  return { source, params };
}

test("concatRows: forward stacks the rows, backward hands each part its rows", () => {
  const tape = new Tape();
  const a = tape.param(Float32Array.from([1, 2]), [1, 2]), b = tape.param(Float32Array.from([3, 4, 5, 6]), [2, 2]);
  const y = concatRows([a, b, a]);
  assert.deepEqual(y.shape, [4, 2]);
  assert.deepEqual([...y.data], [1, 2, 3, 4, 5, 6, 1, 2]);
  gradCheck("concatRows", [t([1, 3]), t([4, 3]), t([2, 3])], ([p, q, r]) => concatRows([p, q, r, sliceRows(q, 1, 3), p]));
  assert.throws(() => concatRows([a, tape.param(new Float32Array(3), [1, 3])]), /columns/);
});

test("ViT training forward: every parameter's gradient matches finite differences (ts)", () => {
  const { params } = tinyModel();
  const batch = randomBatch(TINY, 3, 5);
  const objective = imageClassification(TINY);
  const setup = { kernels: tsTrainKernels };
  const { loss, grads } = objective.lossAndGradients(params, batch, setup);
  assert.ok(Number.isFinite(loss) && loss > 0);
  const h = 1e-2;
  for (const [name, values] of params.values) {
    const g = grads.get(name)!;
    let diff = 0, ref = 0;
    for (let i = 0; i < values.length; i++) {
      const x0 = values[i];
      values[i] = x0 + h; const xp = values[i]; const fp = objective.loss(params, batch, setup);
      values[i] = x0 - h; const xm = values[i]; const fm = objective.loss(params, batch, setup);
      values[i] = x0;
      const num = (fp - fm) / (xp - xm);
      diff += (num - g[i]) ** 2; ref += num ** 2;
    }
    const rel = Math.sqrt(diff) / Math.max(Math.sqrt(ref), 1e-6);
    // A key bias adds the same q·b to every score of a query: softmax does not see it.
    if (!name.endsWith("attn_k.bias")) assert.ok(ref > 0, `${name}: no gradient at all`);
    assert.ok(rel < 2e-2, `${name}: gradient differs from finite differences by ${rel.toExponential(2)} (relative)`);
  }
});

test("ViT training forward: the cpu kernels agree with ts (loss and every gradient)", { skip: noCpu }, () => {
  const { params } = tinyModel(2);
  const batch = randomBatch(TINY, 4, 6);
  const objective = imageClassification(TINY);
  const a = objective.lossAndGradients(params, batch, { kernels: tsTrainKernels });
  const b = objective.lossAndGradients(params, batch, { kernels: trainKernelsFor("cpu") });
  assert.ok(Math.abs(a.loss - b.loss) < 1e-5, `loss ${a.loss} vs ${b.loss}`);
  for (const [name, g] of a.grads) {
    const h = b.grads.get(name)!;
    let diff = 0, ref = 0;
    for (let i = 0; i < g.length; i++) { diff += (g[i] - h[i]) ** 2; ref += g[i] ** 2; }
    assert.ok(Math.sqrt(diff) <= 1e-4 * Math.max(Math.sqrt(ref), 1e-3), `${name}: cpu and ts gradients differ by ${Math.sqrt(diff)}`);
  }
});

test("ViT inference forward (archs/vit.ts) gives the training forward's logits, on ts and cpu", () => {
  const { source, params } = tinyModel(3);
  const batch = randomBatch(TINY, 5, 7);
  const tape = new Tape();
  const want = vitTrainingForward(tape, TINY, params, batch).logits.data;
  // The same weights as a file: the initial model's metadata with the perturbed tensors.
  const run = vitTiny.resume(source, { backend: "ts" });
  for (const [name, v] of params.values) run.params.values.get(name)!.set(v);
  for (const device of noCpu ? ["ts"] as const : ["ts", "cpu"] as const) {
    const model = loadVisionModel(parseGGUF(readGGUFBytes(run), "<tiny>"), device);
    const got = model.forward(batch.pixels, batch.size).data;
    assert.equal(got.length, want.length);
    for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i] - want[i]) < 1e-4, `${device}: logit ${i}: ${got[i]} vs ${want[i]}`);
  }
});

/** A run's current weights as GGUF bytes (through its save path). */
function readGGUFBytes(run: ReturnType<typeof vitTiny.resume>): Uint8Array {
  const path = join(tmp, `snapshot-${Math.random().toString(36).slice(2)}.gguf`);
  run.save(path);
  return readGGUF(path).bytes;
}

test("checkpoints are GGUF with the vit.* keys, and load back to the same config and weights", () => {
  const run = vitTiny.realize(TINY, { backend: "ts", seed: 4, classes: ["x", "y", "z"], normalization: { mean: [0.25], std: [0.5] } });
  run.step(randomBatch(TINY, 4, 9));
  const path = join(tmp, "ckpt.gguf");
  run.save(path);
  const file = readGGUF(path);
  assert.equal(file.metadata.get("general.architecture"), "vit");
  for (const [key, want] of [["vit.image.channels", 1], ["vit.image.height", 6], ["vit.image.width", 4], ["vit.patch_size", 2], ["vit.embedding_length", 8],
    ["vit.block_count", 2], ["vit.attention.head_count", 2], ["vit.feed_forward_length", 12], ["vit.class_count", 3]] as const) {
    assert.equal(file.metadata.get(key), want, key);
  }
  assert.deepEqual(file.metadata.get("vit.class_names"), ["x", "y", "z"]);
  assert.deepEqual(vitConfigOf(file), TINY);
  const model = loadVisionModel(file, "ts");
  assert.deepEqual(model.classes, ["x", "y", "z"]);
  assert.deepEqual(model.normalization, { mean: [0.25], std: [0.5] });
  const back = parametersFromFile(file);
  for (const [name, v] of run.params.values) assert.deepEqual(back.values.get(name), v, name);
});

// ---- The command line, on synthetic images: 28×28, a 13×13 patch of texture at a random place
// (class 0 horizontal stripes, 1 vertical stripes, 2 a checkerboard, 3 solid), with noise. A
// t10k pair of 400 images: by default the first 320 train and the last 80 evaluate.

const syntheticDir = join(tmp, "synthetic");
{
  const N = 400, rng = new Rng(42);
  const pixels = new Uint8Array(N * 28 * 28), labels = new Uint8Array(N);
  const textures = [(y: number) => y % 2 === 0, (_y: number, x: number) => x % 2 === 0, (y: number, x: number) => (x + y) % 2 === 0, () => true];
  for (let i = 0; i < N; i++) {
    const k = i % 4, y0 = Math.floor(rng.next() * 15), x0 = Math.floor(rng.next() * 15);
    labels[i] = k;
    for (let y = 0; y < 28; y++) for (let x = 0; x < 28; x++) {
      const on = y >= y0 && y < y0 + 13 && x >= x0 && x < x0 + 13 && textures[k](y, x);
      pixels[i * 784 + y * 28 + x] = Math.min(255, (on ? 200 : 0) + Math.floor(rng.next() * 40));
    }
  }
  mkdirSync(syntheticDir);
  writeFileSync(join(syntheticDir, "t10k-images-idx3-ubyte"), encodeIdx(pixels, [N, 28, 28]));
  writeFileSync(join(syntheticDir, "t10k-labels-idx1-ubyte"), encodeIdx(labels, [N]));
}

const VIT_ARGS = ["--data", syntheticDir, "--config", "nano", "--steps", "150", "--batch", "16", "--lr", "5e-3", "--warmup", "10", "--eval-every", "75", "--save-every", "50", "--seed", "1", "--json"];

const trainVit = (out: string, env: Record<string, string> = {}): string => trainRun(["vit", ...VIT_ARGS], out, env);

const reference = trainVit(join(tmp, "ref"));

test("toy train vit writes the run bundle: events with accuracy, checkpoints, loss curve; it learns", () => {
  const ev = events(reference);
  const start = ev[0];
  assert.equal(start.event, "run_start");
  assert.equal(start.recipe, "vit");
  assert.equal(start.config.arch, "vit");
  assert.match(start.data_split, /train on the first 320 of 400, evaluate on the last 80/);
  const steps = ev.filter((e) => e.event === "step");
  assert.equal(steps.length, 150);
  assert.equal(steps[0].images, 16);
  assert.ok(steps[0].images_per_s > 0);
  const evals = ev.filter((e) => e.event === "eval");
  assert.deepEqual(evals.map((e) => e.step), [0, 75, 150]);
  for (const e of evals) assert.ok(e.accuracy >= 0 && e.accuracy <= 1 && e.val_loss > 0);
  assert.ok(evals[0].accuracy < 0.5 && evals[2].accuracy >= 0.9, `accuracy ${evals[0].accuracy} at the start, ${evals[2].accuracy} after 150 steps`);
  assert.ok(evals[2].val_loss < evals[0].val_loss);
  assert.ok(existsSync(join(reference, "weights", "final.gguf")) && existsSync(join(reference, "loss.svg")));
  assert.equal(ev.at(-1)!.event, "run_end");
});

test("toy train vit: the same seed gives the same losses and weights, for 1 and 2 threads", { skip: noCpu }, () => {
  const one = trainVit(join(tmp, "t1"), { TOY_THREADS: "1" }), two = trainVit(join(tmp, "t2"), { TOY_THREADS: "2" });
  assert.deepEqual(losses(one), losses(reference));
  assert.deepEqual(losses(two), losses(reference));
  assert.deepEqual(readFileSync(join(two, "weights", "final.gguf")), readFileSync(join(reference, "weights", "final.gguf")));
});

test("toy train --resume continues a ViT run from its last checkpoint to the uninterrupted losses", () => {
  // A run that stopped right after its step-100 checkpoint: the reference without its final files.
  const dir = join(tmp, "resumed");
  cpSync(reference, dir, { recursive: true });
  for (const f of readdirSync(join(dir, "weights"))) if (f.startsWith("final.")) rmSync(join(dir, "weights", f));
  const r = toy(["train", "--resume", dir]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(losses(dir), losses(reference));
  const ev = events(dir);
  assert.equal(ev.filter((e) => e.event === "resume").length, 1);
  assert.deepEqual(ev.filter((e) => e.event === "eval").map((e) => [e.step, e.accuracy]), events(reference).filter((e) => e.event === "eval").map((e) => [e.step, e.accuracy]));
  assert.deepEqual(readFileSync(join(dir, "weights", "final.gguf")), readFileSync(join(reference, "weights", "final.gguf")));
});

test("toy eval on a ViT checkpoint: accuracy and the confusion matrix, as text and --json", () => {
  const ckpt = join(reference, "weights", "final.gguf");
  const j = toy(["eval", ckpt, "--data", syntheticDir, "--json"]);
  assert.equal(j.status, 0, j.stderr);
  const r = JSON.parse(j.stdout);
  assert.equal(r.images, 80);
  assert.deepEqual(r.classes, ["0", "1", "2", "3"]);
  assert.equal(r.confusion.length, 4);
  assert.equal(r.confusion.flat().reduce((a: number, b: number) => a + b, 0), 80);
  assert.equal(r.confusion.reduce((s: number, row: number[], i: number) => s + row[i], 0), r.correct);
  assert.equal(r.accuracy, r.correct / 80);
  // The training run's last eval event measured the same thing.
  assert.equal(r.accuracy, events(reference).filter((e) => e.event === "eval").at(-1)!.accuracy);
  const text = toy(["eval", ckpt, "--data", syntheticDir]);
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /accuracy: \d+\.\d\d% \(\d+\/80\)/);
  assert.match(text.stdout, /true\\pred +0 +1 +2 +3/);
  // A ViT is not a language model: toy infer says what it is (exit 3).
  const infer = toy(["infer", ckpt, "--prompt", "hi"]);
  assert.equal(infer.status, 3);
  assert.match(infer.stderr, /a vit image classifier, not a language model/);
  // Usage: a ViT needs --data; a language model's flags are refused.
  assert.equal(toy(["eval", ckpt]).status, 2);
  assert.equal(toy(["eval", ckpt, "--data", syntheticDir, "--prompt", "hi"]).status, 2);
});

test("toy train vit and toy eval on bad --data: exit 3 with a message naming the folder", () => {
  const empty = join(tmp, "empty");
  mkdirSync(empty);
  for (const [dir, pattern] of [[empty, /neither MNIST files .* nor class folders/], [join(tmp, "missing"), /no such folder/]] as const) {
    const r = toy(["train", "vit", "--data", dir, "--out", join(tmp, "bad-runs")]);
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, pattern);
    assert.ok(r.stderr.includes(dir));
  }
  const half = join(tmp, "half");
  mkdirSync(half);
  writeFileSync(join(half, "t10k-images-idx3-ubyte"), readFileSync(join(syntheticDir, "t10k-images-idx3-ubyte")));
  const r = toy(["train", "vit", "--data", half, "--out", join(tmp, "bad-runs")]);
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /not its labels/);
  const truncated = join(tmp, "truncated");
  mkdirSync(truncated);
  writeFileSync(join(truncated, "t10k-images-idx3-ubyte"), readFileSync(join(syntheticDir, "t10k-images-idx3-ubyte")).subarray(0, 1000));
  writeFileSync(join(truncated, "t10k-labels-idx1-ubyte"), readFileSync(join(syntheticDir, "t10k-labels-idx1-ubyte")));
  const e = toy(["eval", join(reference, "weights", "final.gguf"), "--data", truncated]);
  assert.equal(e.status, 3, e.stderr);
  assert.match(e.stderr, /t10k-images-idx3-ubyte/);
  assert.ok(!existsSync(join(tmp, "bad-runs")) || readdirSync(join(tmp, "bad-runs")).length === 0, "no bundle for a run that never started");
});

test("toy train vit on class folders of PNGs: class names and sizes come from the folder and reach the checkpoint", () => {
  const dir = join(tmp, "folders");
  const rng = new Rng(3);
  ["cat", "dog"].forEach((name, k) => {
    mkdirSync(join(dir, name), { recursive: true });
    for (let i = 0; i < 10; i++) {
      const data = Uint8Array.from({ length: 14 * 14 }, (_, j) => ((k === 0 ? Math.floor(j / 14) : j % 14) % 2 === 0 ? 200 : 0) + Math.floor(rng.next() * 40));
      writeFileSync(join(dir, name, `${i}.png`), encodePng({ width: 14, height: 14, data, channels: 1, depth: 8 }));
    }
  });
  const out = join(tmp, "folder-runs");
  const r = toy(["train", "vit", "--data", dir, "--config", "nano", "--steps", "4", "--batch", "4", "--json", "--out", out]);
  assert.equal(r.status, 0, r.stderr);
  const run = runDir(out);
  assert.match(events(run)[0].data_split, /20 images in 2 classes; 4 \(fraction 0.2 of each class, seed 0\) held out/);
  const file = readGGUF(join(run, "weights", "final.gguf"));
  assert.deepEqual(file.metadata.get("vit.class_names"), ["cat", "dog"]);
  assert.equal(file.metadata.get("vit.image.height"), 14);
  const e = toy(["eval", join(run, "weights", "final.gguf"), "--data", dir, "--json"]);
  assert.equal(e.status, 0, e.stderr);
  const res = JSON.parse(e.stdout);
  assert.deepEqual(res.classes, ["cat", "dog"]);
  assert.equal(res.images, 4); // a fifth of each class held out
});

test("a ViT's algorithm card renders, parses back to its config, and toy describe reads it", () => {
  const ckpt = join(reference, "weights", "final.gguf");
  const config = vitConfigOf(readGGUF(ckpt));
  const card = renderVitCard(config, { name: "toy-vit-nano" });
  assert.match(card, /^Algorithm: vit — toy-vit-nano/);
  assert.match(card, /P = 7 +▷ patch side: n = 16 patches of C·P² = 49 values, T = n \+ 1 = 17 tokens/);
  assert.match(card, /Y_h ← softmax\(S\) V_h +▷ \[T, 16\], bidirectional: no mask/);
  const back = readVitCard(card);
  assert.deepEqual(back.config, config);
  assert.equal(renderVitCard(back.config, back.meta), card);
  assert.throws(() => readVitCard(card.replace("  P = 7 ", "  P = 5 ")), /card:\d+: .*not a whole number of 5×5 patches/);
  assert.throws(() => readVitCard(card.replace("  d_mlp = 64 ", "  d_mlp = 65 ")), /does not follow from the hyperparameters/);
  const described = toy(["describe", ckpt]);
  assert.equal(described.status, 0, described.stderr);
  assert.match(described.stdout, /^Algorithm: vit — toy-vit-nano/);
  const cardPath = join(tmp, "vit.card.txt");
  writeFileSync(cardPath, described.stdout);
  const viaCard = toy(["describe", "--parse", cardPath, "--json"]);
  assert.equal(viaCard.status, 0, viaCard.stderr);
  assert.equal(viaCard.stdout, toy(["describe", ckpt, "--json"]).stdout);
  assert.deepEqual(JSON.parse(viaCard.stdout), config);
});

// ---- MNIST (../shared/data/mnist): a short run of the library API, as docs/vit.md shows it.

const mnist = sharedData("mnist");

test("MNIST: nano trained for 1,200 steps through the library API classifies the 2,000 held-out digits (≥ 80%)", { skip: mnist.skip }, () => {
  const data = loadMnistDir(mnist.dir);
  const run = vitTiny.realize(vitConfigFor(data.train, "nano"), {
    steps: 1200, lr: 5e-3, warmup: 60, weightDecay: 0.05, seed: 0, classes: data.train.classes, normalization: data.normalization,
  });
  const batches = new ImageBatches(data.train, { batchSize: 32, seed: 0 });
  const started = performance.now();
  for (let s = 0; s < 1200; s++) run.step(batches.next());
  const r = run.evaluate(data.eval);
  console.log(`MNIST nano, 1,200 steps of 32: ${(100 * r.accuracy).toFixed(2)}% of ${r.count} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  assert.equal(r.count, 2000);
  assert.ok(r.accuracy >= 0.8, `accuracy ${r.accuracy}`);
});
