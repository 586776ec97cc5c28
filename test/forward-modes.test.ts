// One forward, two runs: for every architecture the training forward (the architecture's own
// forward on the autograd tape, float32 parameters dequantized from the file) gives the logits
// of the inference forward (the same code through InferenceOps: stored weights, the KV cache,
// the backend's fused kernels), on ts and cpu, on the same tokens: two sequences batched in
// training, each through its own cache in inference.
//
// Tolerances (max |Δ| over all logits, relative to the largest |logit|):
// - ts: both runs call the same reference kernels in the same order, so the logits are the same
//   bits (observed: 0 for every model but OLMoE, whose router softmax is the tape's own loop:
//   8e-8). Bound 1e-6.
// - cpu, F32 files: both runs do float32 math on the same values; they differ in summation order
//   (the inference kernels' float32 lanes vs the training GEMM's blocking). Observed ≤ 3e-6;
//   bound 1e-4, while a real difference between the runs (a missing scale, a wrong RoPE pairing,
//   a window on the wrong layer) moves logits by ≥ 1e-2 of their scale.
// - cpu, quantized and half-precision files: cpu inference rounds the activations to the
//   weight's type as llama.cpp does (8-bit blocks; fp16 for F16), training multiplies float32
//   activations by the dequantized weights. So training on cpu is checked against exact math
//   (inference on ts, the float32 reference: bound 1e-4 as above), and its distance from
//   inference on cpu must not exceed the quantization distance itself, |inference cpu −
//   inference ts|, by more than that bound (SmolLM2: 6.4 on logits up to 32 for random tokens;
//   the tiny Q4/Q6 models 1–1.6 on ±76).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadModel } from "../src/archs/index.js";
import { loadVisionModel } from "../src/archs/vit.js";
import type { VitConfig } from "../src/archs/vitConfig.js";
import { trainKernelsFor } from "../src/autograd/kernels/index.js";
import { Tape } from "../src/autograd/tape.js";
import { cpuBackend, type Device } from "../src/backends/index.js";
import { Rng } from "../src/data/rng.js";
import { trainingForward, vitTrainingForward } from "../src/train/objectives.js";
import { parametersFromFile } from "../src/train/params.js";
import { parseGGUF } from "../src/io/gguf/reader.js";
import { initialVitBytes } from "../src/recipes/vitTiny.js";
import { fixtures } from "./helpers/fixtures.js";
import { storageOf } from "./helpers/tolerances.js";

const fx = fixtures();
const cpu = cpuBackend();
const DEVICES: [Device, string | false][] = [["ts", false], ["cpu", "error" in cpu ? `no native backend (${cpu.error})` : false]];

const MODELS = [
  "stories260K", "llama-tiny", "llama3-tiny", "qwen2-tiny", "qwen3-tiny", "gemma2-tiny", "olmoe-tiny", "gpt2-tiny",
  "llama-q-src", "llama-q-F16", "llama-q-Q8_0", "llama-q-Q4_0", "llama-q-Q4_K_M", "llama-q-Q6_K", "SmolLM2-135M-Instruct.Q4_1",
];

const EXACT = 1e-6, FLOAT32 = 1e-4;

const B = 2, T = 12;

/** max |a − b| and max |a|. */
function distance(a: Float32Array, b: Float32Array): { worst: number; scale: number } {
  assert.equal(a.length, b.length, `${a.length} vs ${b.length} logits`);
  let worst = 0, scale = 0;
  for (let i = 0; i < a.length; i++) {
    worst = Math.max(worst, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(a[i]));
  }
  assert.ok(Number.isFinite(worst) && scale > 0, "logits are not finite");
  return { worst, scale };
}

/** Training's logits are within `limit` of the scale of inference's (plus `allowance`, absolute). */
function compare(what: string, inference: Float32Array, training: Float32Array, limit: number, allowance = 0): void {
  const { worst, scale } = distance(inference, training);
  console.log(`# ${what}: max |Δlogit| ${worst.toExponential(2)} on logits up to ${scale.toFixed(1)}; bound ${limit} of it${allowance ? ` + ${allowance.toExponential(2)}` : ""}`);
  assert.ok(worst <= limit * scale + allowance, `${what}: training and inference logits differ by ${worst.toExponential(2)}`);
}

/** Inference logits of B sequences of T tokens, each through its own KV cache: [B·T, vocab]. */
function inferenceLogits(path: string, device: Device, input: Int32Array): Float32Array {
  const model = loadModel(path, device), V = model.nVocab;
  const out = new Float32Array(B * T * V);
  for (let b = 0; b < B; b++) out.set(model.forward(input.subarray(b * T, (b + 1) * T), model.newCache(T), "all").data, b * T * V);
  return out;
}

for (const m of MODELS) for (const [device, noDevice] of DEVICES) {
  const path = join(fx.dir, "models", `${m}.gguf`);
  const skip = fx.skip || noDevice || (!existsSync(path) && `${path} is not there`);
  test(`${m} on ${device}: the training forward's logits are the inference forward's`, { skip }, () => {
    const model = loadModel(path, "ts");
    const rng = new Rng(7);
    const input = Int32Array.from({ length: B * T }, () => 1 + Math.floor(rng.next() * (model.nVocab - 1)));
    const tape = new Tape(trainKernelsFor(device));
    const training = trainingForward(tape, model.config, parametersFromFile(model.file), { input, target: input, batch: B, seq: T }).logits.data;
    const exact = inferenceLogits(path, "ts", input);
    if (device === "ts") return compare(`${m} ts`, exact, training, EXACT);
    const inference = inferenceLogits(path, "cpu", input);
    if (storageOf(m) === "src") return compare(`${m} cpu`, inference, training, FLOAT32);
    compare(`${m} cpu training vs ts inference (exact math)`, exact, training, FLOAT32);
    const { worst: quantization, scale } = distance(exact, inference);
    compare(`${m} cpu (quantized activations in inference: ${quantization.toExponential(2)} from exact)`, inference, training, FLOAT32, quantization);
    assert.ok(quantization < 0.25 * scale, `${m}: cpu inference is ${quantization} away from exact math`);
  });
}

/** A ViT with random weights (every tensor F32): 3 images of 1×6×4 in 2×2 patches. */
const VIT: VitConfig = {
  arch: "vit", channels: 1, height: 6, width: 4, patchSize: 2, nEmbd: 8, nLayer: 2, nHead: 2, headDim: 4, nFF: 12, nClasses: 3, normEps: Math.fround(1e-6),
};

for (const [device, noDevice] of DEVICES) {
  test(`vit on ${device}: the training forward's logits are the inference forward's`, { skip: noDevice }, () => {
    const file = parseGGUF(initialVitBytes(VIT, 3, ["a", "b", "c"], null), "<vit>");
    const rng = new Rng(5);
    const pixels = Float32Array.from({ length: 3 * 24 }, () => rng.normal());
    const inference = loadVisionModel(file, device).forward(pixels, 3).data;
    const tape = new Tape(trainKernelsFor(device));
    const { logits } = vitTrainingForward(tape, VIT, parametersFromFile(file), { pixels, labels: Int32Array.of(0, 1, 2), size: 3 });
    compare(`vit ${device}`, inference, logits.data, device === "ts" ? EXACT : FLOAT32);
  });
}
