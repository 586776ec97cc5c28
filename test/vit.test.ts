// The Vision Transformer (#8): concatRows' backward; the training forward's gradients against
// finite differences and the cpu kernels against ts; the inference forward (archs/vit.ts) against
// the training forward; checkpoints as GGUF with the vit.* keys; `toy train vit` and `toy eval`
// on synthetic images (and, when ../shared/data/mnist is there, a short run that must learn).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { concatRows, sliceRows } from "../src/autograd/ops/index.js";
import { Tape } from "../src/autograd/tape.js";
import { tsTrainKernels, trainKernelsFor } from "../src/autograd/kernels/index.js";
import { loadVisionModel } from "../src/archs/vit.js";
import { vitConfigOf, type VitConfig } from "../src/archs/vitConfig.js";
import { cpuBackend } from "../src/backends/index.js";
import { Rng } from "../src/engines/rng.js";
import { imageClassification, vitTrainingForward, type ImageBatchInput } from "../src/engines/vitForward.js";
import { parseGGUF, readGGUF } from "../src/io/gguf/reader.js";
import { initialVitBytes, vitTiny } from "../src/recipes/vitTiny.js";
import { parametersFromFile } from "../src/engines/trainParams.js";
import { gradChecker } from "./helpers/gradCheck.js";

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
