// The webgpu backend on every tiny fixture model and storage type against the references the
// conformance tests use (test/conformance.test.ts): prompt logits (top-16 and logsumexp), top-1
// at every prompt position, the greedy continuation (generateAsync), the same bits on a second
// run, greedy argmax on the GPU, f16 and q8_0 KV caches, a mixture of experts routed on the GPU
// (each row's bits whatever the batch), and what webgpu refuses.
// SmolLM2-135M and Gemma 3 270M run only with TOY_SLOW=1 (llvmpipe is slow). Skips without
// fixtures or adapter.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { loadModel } from "../src/archs/index.js";
import { generateAsync } from "../src/engines/generate.js";
import { DEFAULT_SAMPLING } from "../src/engines/sampling.js";
import { logSumExp } from "../src/primitives/index.js";
import { fixtures } from "./helpers/fixtures.js";
import { assertGreedy, assertTop1, loadRef, maxLogitError } from "./helpers/refs.js";
import { KV_CACHE_DISTANCE, tolerance } from "./helpers/tolerances.js";
import { toyJson } from "./helpers/cli.js";
import { webgpu } from "./helpers/webgpu.js";
import { webgpuRuntime } from "../src/backends/index.js";

const fx = fixtures();
const gpu = await webgpu();
const skip = fx.skip || gpu.skip;
const MODELS = [
  "stories260K", "llama-tiny", "llama3-tiny",
  "llama-q-src", "llama-q-F16", "llama-q-BF16", "llama-q-Q8_0", "llama-q-Q4_0", "llama-q-Q4_1", "llama-q-Q5_0",
  "llama-q-Q5_1", "llama-q-Q2_K", "llama-q-Q3_K_M", "llama-q-Q4_K_M", "llama-q-Q5_K_M", "llama-q-Q6_K",
  "llama-q-IQ4_NL", "llama-q-IQ4_XS",
  "gpt2-tiny", "qwen2-tiny", "qwen3-tiny", "gemma2-tiny", "olmoe-tiny",
  ...(process.env.TOY_SLOW ? ["SmolLM2-135M-Instruct.Q4_1"] : []),
];
const greedy = { ...DEFAULT_SAMPLING, temperature: 0 };
const path = (name: string) => join(fx.dir, "models", `${name}.gguf`);

for (const name of MODELS) {
  test(`${name} on webgpu matches the reference`, { skip }, async () => {
    const tol = tolerance(name, "webgpu");
    const ref = loadRef(fx.dir, tol.engine, name)!;
    const model = loadModel(path(name), "webgpu");
    const logits = await model.forwardAsync!(Int32Array.from(ref.prompt), model.newCache(ref.prompt.length), "all");
    const row = (i: number) => logits.data.subarray(i * model.nVocab, (i + 1) * model.nVocab);
    const err = maxLogitError(ref, row, (i) => logSumExp(row(i)));
    console.log(`# ${name} webgpu vs ${tol.engine}: max |Δlogit| ${err.toExponential(2)} (tolerance ${tol.logits})`);
    assert.ok(err <= tol.logits, `${name} on webgpu: max |Δlogit| ${err} > ${tol.logits}`);
    assertTop1(ref, row, tol.margin, `${name} webgpu`);
    const out = await generateAsync(model, ref.prompt, { maxTokens: ref.greedy.length, sampling: greedy });
    const n = assertGreedy(ref, out.tokens, tol.margin, `${name} webgpu`);
    console.log(`# ${name} webgpu: greedy equal for ${n}/${ref.greedy.length} steps`);
  });
}

// Gemma 3 270M: its token embedding (262,144 rows) is larger than llvmpipe's 128 MiB storage
// binding, so it runs split into parts; sliding-window and global layers, Q5_0/Q8_0/Q4_K/Q6_K.
const GEMMA3 = "gemma-3-270m-q4_k_m";
const gemma3Path = process.env.TOY_GEMMA3 ?? join(homedir(), ".cache", "toy-fixtures", `${GEMMA3}.gguf`);
const gemma3Skip = skip || (!existsSync(gemma3Path) ? `SKIPPED: Gemma 3 270M not found at ${gemma3Path}`
  : process.env.TOY_SLOW !== "1" ? "SKIPPED: Gemma 3 270M on webgpu takes ~4 CPU-minutes on llvmpipe; set TOY_SLOW=1 to run it" : false);
test("Gemma 3 270M on webgpu matches exact math (short prompt)", { skip: gemma3Skip }, async () => {
  const tol = tolerance(GEMMA3, "webgpu");
  const ref = loadRef(fx.dir, tol.engine, GEMMA3)!;
  const model = loadModel(gemma3Path, "webgpu");
  const logits = await model.forwardAsync!(Int32Array.from(ref.prompt), model.newCache(ref.prompt.length), "all");
  const row = (i: number) => logits.data.subarray(i * model.nVocab, (i + 1) * model.nVocab);
  const err = maxLogitError(ref, row, (i) => logSumExp(row(i)));
  console.log(`# Gemma 3 webgpu vs ${tol.engine}: max |Δlogit| ${err.toExponential(2)} (tolerance ${tol.logits})`);
  assert.ok(err <= tol.logits, `Gemma 3 on webgpu: max |Δlogit| ${err} > ${tol.logits}`);
  assertTop1(ref, row, tol.margin, "Gemma 3 webgpu");
  const out = await generateAsync(model, ref.prompt, { maxTokens: ref.greedy.length, sampling: greedy });
  console.log(`# Gemma 3 webgpu: greedy equal for ${assertGreedy(ref, out.tokens, tol.margin, "Gemma 3 webgpu")}/${ref.greedy.length} steps`);
});

test("webgpu: the same bits on every run; greedy argmax on the GPU picks the logits' argmax", { skip }, async () => {
  const model = loadModel(path("qwen2-tiny"), "webgpu");
  const prompt = Int32Array.from([1, 20, 300, 400, 50, 6, 70]);
  const a = await model.forwardAsync!(prompt, model.newCache(16), "all");
  const b = await model.forwardAsync!(prompt, model.newCache(16), "all");
  assert.deepEqual(a.data, b.data);
  // prompt, then one decode step, both ways
  const c1 = model.newCache(16), c2 = model.newCache(16);
  const last = (await model.forwardAsync!(prompt, c1, "last")).data;
  const id = await model.greedyAsync!(prompt, c2);
  let best = 0;
  for (let i = 1; i < last.length; i++) if (last[i] > last[best]) best = i;
  assert.equal(id, best);
  assert.equal(c2.length, prompt.length);
  const next1 = (await model.forwardAsync!(Int32Array.of(id), c1, "last")).data;
  const next2 = (await model.forwardAsync!(Int32Array.of(id), c2, "last")).data;
  assert.deepEqual(next1, next2);
});

// blocks/gpuOps.ts joins q/k/v, gate/up with their gated unit, and a product with the residual
// sum into single dispatches: the same sums in the same order, so the same bits as the separate
// kernels, on the prompt and on a decode step (swiglu, geglu, biases, post-norms, a split vocabulary).
test("webgpu: joined dispatches give the bits of separate ones", { skip }, async () => {
  const rt = webgpuRuntime();
  for (const name of ["llama-q-Q4_K_M", "gemma2-tiny", "gpt2-tiny", "qwen2-tiny", "qwen3-tiny"]) {
    const model = loadModel(path(name), "webgpu");
    const prompt = Int32Array.from({ length: 9 }, (_, i) => (i * 37 + 5) % 200);
    const run = async (fuse: boolean) => {
      rt.fuse = fuse;
      try {
        const cache = model.newCache(16);
        const all = await model.forwardAsync!(prompt, cache, "all");
        const next = await model.forwardAsync!(Int32Array.of(7), cache, "last");
        return [all.data, next.data];
      } finally {
        rt.fuse = true;
      }
    };
    assert.deepEqual(await run(true), await run(false), name);
  }
});

test("webgpu: an f16 KV cache stays within the f16 bound of the f32 one", { skip }, async () => {
  for (const name of ["llama3-tiny", "gemma2-tiny"]) {
    const model = loadModel(path(name), "webgpu");
    const prompt = Int32Array.from({ length: 20 }, (_, i) => (i * 37 + 5) % 200);
    const f32 = await model.forwardAsync!(prompt, model.newCache(32, { type: "f32" }), "all");
    const f16 = await model.forwardAsync!(prompt, model.newCache(32, { type: "f16" }), "all");
    let worst = 0;
    for (let i = 0; i < f32.data.length; i++) worst = Math.max(worst, Math.abs(f32.data[i] - f16.data[i]));
    console.log(`# ${name} webgpu f16 cache vs f32: max |Δlogit| ${worst.toExponential(2)}`);
    assert.ok(worst <= KV_CACHE_DISTANCE.f16.exactLogits, `${name}: ${worst}`);
  }
});

// q8_0: the GPU quantizes keys and values as the host does (ggml's encoder), so webgpu and ts with
// q8_0 caches differ by float32 sums only (the webgpu tolerance), and both lie within the q8_0
// distance of the f32 cache (test/helpers/tolerances.ts).
test("webgpu: a q8_0 KV cache gives the ts backend's q8_0 logits, within the q8_0 distance of f32", { skip }, async () => {
  const name = "qwen3-tiny"; // head size 32: q8_0 blocks fit
  const gpuModel = loadModel(path(name), "webgpu"), tsModel = loadModel(path(name), "ts");
  const prompt = Int32Array.from({ length: 20 }, (_, i) => (i * 37 + 5) % 200);
  const q8 = await gpuModel.forwardAsync!(prompt, gpuModel.newCache(32, { type: "q8_0" }), "all");
  const f32 = await gpuModel.forwardAsync!(prompt, gpuModel.newCache(32, { type: "f32" }), "all");
  const ref = tsModel.forward(prompt, tsModel.newCache(32, { type: "q8_0" }), "all");
  let vsTs = 0, vsF32 = 0;
  for (let i = 0; i < q8.data.length; i++) {
    vsTs = Math.max(vsTs, Math.abs(q8.data[i] - ref.data[i]));
    vsF32 = Math.max(vsF32, Math.abs(q8.data[i] - f32.data[i]));
  }
  console.log(`# ${name} webgpu q8_0 cache: max |Δlogit| ${vsTs.toExponential(2)} vs ts q8_0, ${vsF32.toExponential(2)} vs f32`);
  assert.ok(vsTs <= tolerance(name, "webgpu").logits, `vs ts: ${vsTs}`);
  assert.ok(vsF32 <= KV_CACHE_DISTANCE.q8_0.exactLogits, `vs f32: ${vsF32}`);
  const infer = (backend: string) => toyJson(["infer", path(name), "--backend", backend, "--ids", "1,20,300,40", "--max-tokens", "8", "--temperature", "0", "--cache-type", "q8_0", "--json"]);
  assert.deepEqual(infer("webgpu").tokens, infer("ts").tokens);
});

test("webgpu refuses what it does not run, with exit code 4", { skip }, () => {
  const model = loadModel(path("qwen3-tiny"), "webgpu");
  assert.throws(() => model.forward(Int32Array.of(1), model.newCache(8), "last"), /forwardAsync/);
});

// serve on webgpu: test/serve-webgpu.test.ts.
// OLMoE routes on the GPU: a token's experts, their products and sum must not depend on the
// other rows of the batch (serve batches clients' rows together).
test("webgpu mixture of experts: each sequence of a batch gets its solo bits", { skip }, async () => {
  const model = loadModel(path("olmoe-tiny"), "webgpu");
  const prompts = [[1, 20, 300, 40, 7], [5, 6], [9, 300, 301, 302, 303, 304, 17, 2]].map((p) => Int32Array.from(p));
  const solo: Float32Array[] = [];
  for (const ids of prompts) solo.push((await model.forwardAsync!(ids, model.newCache(16), "last")).data);
  const batch = await model.forwardBatchAsync!(prompts.map((ids) => ({ ids, cache: model.newCache(16) })));
  prompts.forEach((_, i) => assert.deepEqual(batch.data.subarray(i * model.nVocab, (i + 1) * model.nVocab), solo[i], `sequence ${i}`));
});

for (const name of ["qwen2-tiny", "olmoe-tiny"]) test(`toy infer and eval --backend webgpu give the ts backend's answers (${name})`, { skip }, () => {
  const model = path(name);
  const infer = (backend: string) => toyJson(["infer", model, "--backend", backend, "--ids", "1,20,300,40", "--max-tokens", "8", "--temperature", "0", "--cache-type", "f32", "--json"]);
  assert.deepEqual(infer("webgpu").tokens, infer("ts").tokens);
  const evaluate = (backend: string) => toyJson(["eval", model, "--backend", backend, "--ids", "1,20,300,40,5,60", "--json"]);
  const [g, t] = [evaluate("webgpu"), evaluate("ts")];
  assert.ok(Math.abs(g.nll - t.nll) < 1e-4, `nll ${g.nll} vs ${t.nll}`);
});

test("generateAsync on webgpu: greedy on the GPU and sampling from read-back logits give the ts tokens", { skip }, async () => {
  const name = "llama3-tiny", prompt = [1, 20, 300, 40, 7];
  const gpuModel = loadModel(path(name), "webgpu"), tsModel = loadModel(path(name), "ts");
  for (const sampling of [greedy, { ...greedy, repeatPenalty: 1.3 }, { ...DEFAULT_SAMPLING, seed: 5 }]) {
    const stopIds = new Set([3]);
    const a = await generateAsync(gpuModel, prompt, { maxTokens: 12, sampling, stopIds });
    const b = await generateAsync(tsModel, prompt, { maxTokens: 12, sampling, stopIds });
    assert.deepEqual(a.tokens, b.tokens, JSON.stringify(sampling));
    assert.equal(a.finishReason, b.finishReason);
    assert.deepEqual(a.cachedIds, b.cachedIds);
    assert.equal(a.cache.length, b.cache.length);
  }
});
