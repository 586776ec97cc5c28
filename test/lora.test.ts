// LoRA: `toy train lora` on a tiny written model (and on stories260K from the fixtures when
// present) trains only the adapters, saves them in llama.cpp's LoRA GGUF format, and with
// --merge a merged model equal to W + (alpha/rank)·B·A; `toy infer --lora` applies the adapter.
// The file layout is the one llama.cpp's loader reads (src/recipes/loraAdapter.ts says how),
// including token_embd's flipped pair and a rank per pair; where llama.cpp's tools are built
// ($TOY_LLAMA_CPP, else .bench/llama.cpp/build/bin, which `npm run bench` builds: bench/peers.ts),
// llama-export-lora merges toy's adapters to toy's own merge, and llama-perplexity with --lora
// scores text as toy eval --lora does.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGGUF, type GGUFFile } from "../src/io/gguf/reader.js";
import { parametersFromFile } from "../src/train/params.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { GGUFValueType } from "../src/io/gguf/reader.js";
import { GGMLType } from "../src/io/gguf/types.js";
import { writeGGUF } from "../src/io/gguf/writer.js";
import { applyLoraAdapter, lora, loraScale, readLoraAdapter, writeLoraAdapter, type LoraAdapter } from "../src/recipes/lora.js";
import { warmStart } from "../src/recipes/warmStart.js";
import { mulberry32, writeTinyLlama } from "./helpers/tiny-model.js";
import { fixtures, projectRoot } from "./helpers/fixtures.js";
import { toy } from "./helpers/cli.js";
import { lossAndGradients } from "../src/train/objectives.js";
import { trainKernelsFor, tsTrainKernels } from "../src/autograd/kernels/index.js";
import { cpuBackend } from "../src/backends/index.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-lora-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const data = join(tmp, "data.txt");
writeFileSync(data, Array.from({ length: 100 }, () => "a cat sat on a mat and a bat ate a hat.").join("\n"));
const base = join(tmp, "tiny.gguf");
writeTinyLlama(base, { nVocab: 300 });

const batch = { input: Int32Array.from([1, 70, 80, 90, 100, 110, 120, 130]), target: Int32Array.from([70, 80, 90, 100, 110, 120, 130, 140]), batch: 1, seq: 8 };
const lossOf = (file: Parameters<typeof warmStart.realize>[0]) => warmStart.realize(file).trainer.evaluate(batch);

function trainLora(model: string, out: string, extra: string[] = []): string {
  const r = toy(["train", "lora", "--model", model, "--data", data, "--rank", "4", "--alpha", "8", "--targets", "attn_q,attn_v,ffn_down",
    "--steps", "6", "--lr", "0.05", "--batch", "2", "--seq", "16", "--merge", "--out", out, "--json", ...extra]);
  assert.equal(r.status, 0, r.stderr);
  return join(out, readdirSync(out)[0]);
}

test("lora.realize: only the adapters train; B starts at zero so step 0 is the base model", () => {
  const run = lora.realize(base, { rank: 2, alpha: 4, targets: ["attn_q", "attn_v"], lr: 0.05, steps: 3, seed: 1 });
  assert.equal(run.targets.length, 4);
  const before = parametersFromFile(readGGUF(base));
  const l0 = run.trainer.evaluate(batch);
  assert.ok(Math.abs(l0 - lossOf(base)) < 1e-6, "B = 0: the adapted model is the base");
  const r = run.step(batch);
  assert.deepEqual([...r.grads.keys()].sort(), run.targets.flatMap((t) => [`${t}.lora_at`, `${t}.lora_b`]).sort());
  run.step(batch); run.step(batch);
  for (const [name, v] of before.values) assert.deepEqual(run.params.values.get(name), v, `${name} is frozen`);
  assert.ok(run.trainer.evaluate(batch) < l0, "training the adapters lowers the loss");
});

test("LoRA runs factored (x Wᵀ + s·(x Aᵀ) Bᵀ): the loss and adapter gradients of the merged weight W + s·B·A, on ts and cpu", () => {
  const rank = 2, alpha = 4, s = loraScale(alpha, rank);
  const run = lora.realize(base, { rank, alpha, targets: ["attn_q", "attn_v"], seed: 1 });
  const rnd = mulberry32(7);
  for (const t of run.targets) run.params.values.get(`${t}.lora_b`)!.forEach((_, i, b) => { b[i] = (rnd() - 0.5) * 0.2; });
  const cpuKernels = "error" in cpuBackend() ? [] : [trainKernelsFor("cpu")];
  for (const kernels of [tsTrainKernels, ...cpuKernels]) {
    const factored = lossAndGradients(run.config, run.params, batch, { ...run.trainer.setup, kernels });
    // The same model with the adapters merged into plain, trainable weights.
    const values = new Map(run.params.values), dims = new Map(run.params.dims);
    for (const t of run.targets) {
      const [inn, out] = run.params.dims.get(t)!, w = run.params.values.get(t)!;
      const at = run.params.values.get(`${t}.lora_at`)!, b = run.params.values.get(`${t}.lora_b`)!;
      values.set(t, w.map((x, k) => { const o = Math.floor(k / inn), i = k % inn; let d = 0; for (let r = 0; r < rank; r++) d += b[o * rank + r] * at[i * rank + r]; return x + s * d; }));
      values.delete(`${t}.lora_at`); values.delete(`${t}.lora_b`);
      assert.equal(w.length, out * inn);
    }
    const merged = lossAndGradients(run.config, { values, dims }, batch, { kernels });
    assert.ok(Math.abs(factored.loss - merged.loss) <= 1e-5 * Math.abs(merged.loss), `${kernels.device}: loss ${factored.loss} vs ${merged.loss}`);
    for (const t of run.targets) {
      const [inn, out] = run.params.dims.get(t)!, dW = merged.grads.get(t)!;
      const at = run.params.values.get(`${t}.lora_at`)!, b = run.params.values.get(`${t}.lora_b`)!;
      const dB = factored.grads.get(`${t}.lora_b`)!, dAt = factored.grads.get(`${t}.lora_at`)!;
      // ∂B = s ∂W' Aᵀ,  ∂(Aᵀ) = s ∂W'ᵀ B
      const wantB = new Float64Array(out * rank), wantAt = new Float64Array(inn * rank);
      for (let o = 0; o < out; o++) for (let i = 0; i < inn; i++) for (let r = 0; r < rank; r++) {
        wantB[o * rank + r] += s * dW[o * inn + i] * at[i * rank + r];
        wantAt[i * rank + r] += s * dW[o * inn + i] * b[o * rank + r];
      }
      // Float32 rounding of sums that cancel: 1e-4 relative, or 1e-3 of the tensor's RMS gradient.
      const close = (got: Float32Array, want: Float64Array, name: string) => {
        const rms = Math.sqrt(want.reduce((a, x) => a + x * x, 0) / want.length);
        want.forEach((e, k) => assert.ok(Math.abs(got[k] - e) <= 1e-4 * Math.abs(e) + 1e-3 * rms, `${kernels.device} ${name}[${k}]: ${got[k]} vs ${e}`));
      };
      close(dB, wantB, `${t}.lora_b`);
      close(dAt, wantAt, `${t}.lora_at`);
    }
  }
});

test("toy train lora: a llama.cpp LoRA adapter, a merged model equal to base + adapter, and toy infer --lora", () => {
  const dir = trainLora(base, join(tmp, "runs"));
  const adapterPath = join(dir, "weights", "adapter.gguf"), mergedPath = join(dir, "weights", "merged.gguf");
  const adapter = readGGUF(adapterPath);
  assert.equal(adapter.metadata.get("general.type"), "adapter");
  assert.equal(adapter.metadata.get("adapter.type"), "lora");
  assert.equal(adapter.metadata.get("adapter.lora.alpha"), 8);
  assert.equal(adapter.metadata.get("general.architecture"), "llama");
  const q = adapter.tensor("blk.0.attn_q.weight.lora_a")!, qb = adapter.tensor("blk.0.attn_q.weight.lora_b")!;
  assert.deepEqual(q.dims, [32, 4]);   // [in, rank]
  assert.deepEqual(qb.dims, [4, 32]);  // [rank, out]
  assert.deepEqual(adapter.tensor("blk.1.ffn_down.weight.lora_a")!.dims, [64, 4]);
  assert.equal(adapter.tensors.length, 2 * 2 * 3);

  // merged = W + (alpha/rank) B A, and untouched tensors are the base's.
  const ad = readLoraAdapter(adapterPath);
  const baseP = parametersFromFile(readGGUF(base)), merged = parametersFromFile(readGGUF(mergedPath));
  for (const [name, w] of baseP.values) {
    const m = ad.matrices.get(name);
    if (!m) { assert.deepEqual(merged.values.get(name), w, name); continue; }
    let changed = 0;
    for (let o = 0; o < m.rows; o++) for (let i = 0; i < m.cols; i++) {
      let s = 0;
      for (let r = 0; r < 4; r++) s += m.b[o * 4 + r] * m.a[r * m.cols + i];
      const want = w[o * m.cols + i] + 2 * s, got = merged.values.get(name)![o * m.cols + i];
      assert.ok(Math.abs(got - want) <= 1e-6 * (1 + Math.abs(want)), `${name}[${o},${i}]: ${got} vs ${want}`);
      if (got !== w[o * m.cols + i]) changed++;
    }
    assert.ok(changed > 0, `${name} changed`);
  }

  // The adapter changes the model; applied at load time it is the merged model.
  const applied = applyLoraAdapter(readGGUF(base), adapterPath);
  const lBase = lossOf(base), lApplied = lossOf(applied), lMerged = lossOf(mergedPath);
  assert.ok(Math.abs(lApplied - lBase) > 1e-3, `the adapter changes the outputs (${lBase} → ${lApplied})`);
  assert.ok(Math.abs(lApplied - lMerged) < 1e-5, `applied ${lApplied} vs merged ${lMerged}`);

  const infer = (model: string, extra: string[] = []) => {
    const r = toy(["infer", model, "--ids", "1,70,80", "--max-tokens", "12", "--temperature", "0", "--ignore-eos", "--json", ...extra]);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout).tokens as number[];
  };
  const viaLora = infer(base, ["--lora", adapterPath]);
  assert.deepEqual(viaLora, infer(mergedPath));
  assert.notDeepEqual(viaLora, infer(base), "the adapter changes the generated tokens");
});

const fx = fixtures();
test("toy train lora on stories260K changes its outputs and loads with --lora", { skip: fx.skip }, () => {
  const model = join(fx.dir, "models", "stories260K.gguf");
  const dir = trainLora(model, join(tmp, "stories"), ["--steps", "4"]);
  const adapterPath = join(dir, "weights", "adapter.gguf");
  const applied = applyLoraAdapter(readGGUF(model), adapterPath);
  assert.ok(Math.abs(lossOf(applied) - lossOf(model)) > 1e-4);
  assert.ok(Math.abs(lossOf(applied) - lossOf(join(dir, "weights", "merged.gguf"))) < 1e-4);
  const r = toy(["infer", model, "--lora", adapterPath, "--prompt", "Once upon a time", "--max-tokens", "8", "--temperature", "0", "--json"]);
  assert.equal(r.status, 0, r.stderr);
});

/** An adapter of random pairs on some of the tiny model's matrices: a rank of its own for each. */
function randomAdapter(ranks: Record<string, number>, alpha: number, seed = 7): LoraAdapter {
  const rand = mulberry32(seed), model = readGGUF(base);
  const matrices: LoraAdapter["matrices"] = new Map();
  for (const [name, rank] of Object.entries(ranks)) {
    const [cols, rows] = model.tensor(name)!.dims;
    const fill = (n: number) => Float32Array.from({ length: n }, () => 0.5 * (2 * rand() - 1));
    matrices.set(name, { a: fill(rank * cols), b: fill(rows * rank), rows, cols, rank });
  }
  return { alpha, arch: "llama", matrices };
}
const RANKS = { "token_embd.weight": 2, "blk.0.attn_q.weight": 3, "blk.1.ffn_down.weight": 5, "output.weight": 4 };

test("adapter files: llama.cpp's tensor layout, token_embd's pair flipped, alpha as FLOAT32, a rank per pair", () => {
  const path = join(tmp, "random.lora.gguf");
  const ad = randomAdapter(RANKS, 6);
  writeLoraAdapter(path, ad, "random");
  const file = readGGUF(path);
  assert.equal(file.metadataTypes.get("adapter.lora.alpha")?.type, GGUFValueType.FLOAT32);
  assert.equal(file.metadata.get("general.architecture"), "llama");
  // ggml dims: lora_a [in, rank], lora_b [rank, out]; for token_embd [rank, n_vocab] and [rank, n_embd].
  assert.deepEqual(file.tensor("blk.0.attn_q.weight.lora_a")!.dims, [32, 3]);
  assert.deepEqual(file.tensor("blk.0.attn_q.weight.lora_b")!.dims, [3, 32]);
  assert.deepEqual(file.tensor("blk.1.ffn_down.weight.lora_a")!.dims, [64, 5]);
  assert.deepEqual(file.tensor("blk.1.ffn_down.weight.lora_b")!.dims, [5, 32]);
  assert.deepEqual(file.tensor("token_embd.weight.lora_a")!.dims, [2, 300]);
  assert.deepEqual(file.tensor("token_embd.weight.lora_b")!.dims, [2, 32]);
  assert.deepEqual(file.tensor("output.weight.lora_a")!.dims, [32, 4]);
  assert.deepEqual(file.tensor("output.weight.lora_b")!.dims, [4, 300]);
  assert.deepEqual(readLoraAdapter(path), ad, "read back as written");

  // Merged, each matrix moves by (alpha / its own rank) times the product llama.cpp computes from
  // the stored tensors: B A for a matmul weight, and for token_embd ΔW[v, e] = Σ_r a[v, r] b[e, r].
  const baseFile = readGGUF(base), merged = applyLoraAdapter(baseFile, path);
  const f32 = (f: typeof file, name: string) => new Float32Array(f.tensorBytes(f.tensor(name)!).slice().buffer);
  for (const [name, rank] of Object.entries(RANKS)) {
    const [cols, rows] = baseFile.tensor(name)!.dims;
    const w = f32(baseFile, name), got = f32(merged, name);
    const a = f32(file, `${name}.lora_a`), b = f32(file, `${name}.lora_b`), s = 6 / rank;
    let maxDiff = 0;
    for (let o = 0; o < rows; o++) for (let i = 0; i < cols; i++) {
      let d = 0;
      for (let r = 0; r < rank; r++) d += name === "token_embd.weight" ? a[o * rank + r] * b[i * rank + r] : b[o * rank + r] * a[r * cols + i];
      maxDiff = Math.max(maxDiff, Math.abs(got[o * cols + i] - Math.fround(w[o * cols + i] + s * d)));
    }
    assert.ok(maxDiff <= 1e-6, `${name}: max |Δ| ${maxDiff}`);
  }
  assert.deepEqual(f32(merged, "blk.0.attn_k.weight"), f32(baseFile, "blk.0.attn_k.weight"));
});

test("adapter files llama.cpp would refuse are refused, with the reason", () => {
  const tensor = (name: string, dims: number[]) => ({ name, dims, type: GGMLType.F32, bytes: new Uint8Array(4 * dims[0] * dims[1]) });
  const write = (name: string, tensors: ReturnType<typeof tensor>[], arch: string | null = "llama") => {
    const path = join(tmp, name);
    writeGGUF(path, {
      metadata: [...(arch ? [["general.architecture", arch] as [string, string]] : []), ["general.type", "adapter"], ["adapter.type", "lora"], ["adapter.lora.alpha", 8, GGUFValueType.FLOAT32]],
      tensors,
    });
    return path;
  };
  const q = "blk.0.attn_q.weight", pair = [tensor(`${q}.lora_a`, [32, 4]), tensor(`${q}.lora_b`, [4, 32])];
  const refuse = (path: string, pattern: RegExp) => assert.throws(() => applyLoraAdapter(readGGUF(base), path), (e: Error & { exitCode?: number }) => pattern.test(e.message) && e.exitCode === 3);
  refuse(write("lone-a.gguf", [pair[0]]), /blk\.0\.attn_q\.weight has a \.lora_a but no \.lora_b/);
  refuse(write("stray.gguf", [...pair, tensor("blk.0.attn_q.weight.extra", [4, 4])]), /neither a \.lora_a nor a \.lora_b/);
  refuse(write("untransposed.gguf", [tensor(`${q}.lora_a`, [4, 32]), pair[1]]), /lora_a's dims\[1\] must be lora_b's dims\[0\]/);
  refuse(write("no-arch.gguf", pair, null), /general\.architecture is missing/);
  refuse(write("qwen2.gguf", pair, "qwen2"), /an adapter for architecture qwen2, the model is llama/);
  const alora = join(tmp, "alora.gguf");
  writeGGUF(alora, { metadata: [["general.architecture", "llama"], ["general.type", "adapter"], ["adapter.type", "lora"], ["adapter.alora.invocation_tokens", [5, 6], GGUFValueType.ARRAY, GGUFValueType.UINT32]], tensors: pair });
  refuse(alora, /an activated LoRA/);
  refuse(write("wrong-shape.gguf", [tensor(`${q}.lora_a`, [64, 4]), pair[1]]), /blk\.0\.attn_q\.weight is \[32, 32\], the adapter is for \[64, 32\]/);
  // Norm tensors, which some converters add, are skipped as llama.cpp skips them.
  const withNorm = write("norm.gguf", [...pair, { name: "blk.0.attn_norm.weight", dims: [32], type: GGMLType.F32, bytes: new Uint8Array(128) }]);
  assert.deepEqual([...readLoraAdapter(withNorm).matrices.keys()], [q]);
});

// ---- Against llama.cpp itself, where its tools are built (CI does not build them). ----

const LLAMA_BIN = process.env.TOY_LLAMA_CPP ?? join(projectRoot, ".bench", "llama.cpp", "build", "bin");
function llamaTool(name: string): { path: string; skip: string | false } {
  const path = join(LLAMA_BIN, name);
  if (existsSync(path)) return { path, skip: false };
  const skip = `SKIPPED: ${path} is not built (set $TOY_LLAMA_CPP to a llama.cpp build's bin directory, or let \`npm run bench\` build one into .bench/llama.cpp; see docs/cli.md, LoRA adapters)`;
  console.warn(skip);
  return { path, skip };
}

function runLlama(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { encoding: "utf8", timeout: 300_000 });
  assert.equal(r.status, 0, `${tool} ${args.join(" ")}: exit ${r.status}\n${(r.stderr ?? "").slice(-2000)}`);
  return r.stdout + r.stderr;
}

/**
 * llama-export-lora's merged model against toy's, tensor by tensor. Tensors no adapter touches
 * are copied, so bytes must be equal. A merged element is W + s·Σ_r b a: toy sums in float64 and
 * rounds once, ggml rounds each of its rank products and sums, the scale and the add in float32,
 * so the two may differ by (rank + 2) float32 roundings of the largest term: the bound checked is
 * (rank + 2) · 2⁻²⁴ · (|W'| + s · Σ_r |b a|). Returns the largest |Δ| and |Δ| / bound.
 */
function compareMerged(llama: GGUFFile, toyMerged: GGUFFile, ad: LoraAdapter): { maxDiff: number; maxRatio: number; merged: number } {
  const f32 = (f: GGUFFile, name: string) => new Float32Array(f.tensorBytes(f.tensor(name)!).slice().buffer);
  assert.deepEqual(llama.tensors.map((t) => t.name).sort(), toyMerged.tensors.map((t) => t.name).sort());
  let maxDiff = 0, maxRatio = 0, merged = 0;
  for (const info of toyMerged.tensors) {
    const other = llama.tensor(info.name)!;
    assert.deepEqual(other.dims, info.dims, info.name);
    const m = ad.matrices.get(info.name);
    if (!m) { assert.deepEqual(llama.tensorBytes(other), toyMerged.tensorBytes(info), `${info.name} is copied`); continue; }
    assert.equal(other.type, GGMLType.F32, `${info.name}: an F32 base merges to F32`);
    const got = f32(llama, info.name), want = f32(toyMerged, info.name), s = loraScale(ad.alpha, m.rank);
    for (let o = 0; o < m.rows; o++) for (let i = 0; i < m.cols; i++) {
      let mag = 0;
      for (let r = 0; r < m.rank; r++) mag += Math.abs(m.b[o * m.rank + r] * m.a[r * m.cols + i]);
      const k = o * m.cols + i, diff = Math.abs(got[k] - want[k]);
      const bound = (m.rank + 2) * 2 ** -24 * (Math.abs(want[k]) + s * mag);
      assert.ok(diff <= bound, `${info.name}[${o}, ${i}]: llama.cpp ${got[k]}, toy ${want[k]} (bound ${bound})`);
      maxDiff = Math.max(maxDiff, diff);
      if (bound > 0) maxRatio = Math.max(maxRatio, diff / bound);
    }
    merged++;
  }
  return { maxDiff, maxRatio, merged };
}

const exportLora = llamaTool("llama-export-lora");
test("llama-export-lora merges toy's adapters to toy's own merge", { skip: exportLora.skip }, () => {
  // A trained adapter (toy train lora --merge) and a random one on token_embd, output and two
  // matmuls with a rank each, against toy's --merge and applyLoraAdapter.
  const dir = trainLora(base, join(tmp, "export"));
  const trained = join(dir, "weights", "adapter.gguf"), random = join(tmp, "random-export.lora.gguf");
  writeLoraAdapter(random, randomAdapter(RANKS, 6), "random");
  const cases: [string, string, GGUFFile][] = [
    ["trained", trained, readGGUF(join(dir, "weights", "merged.gguf"))],
    ["random", random, applyLoraAdapter(readGGUF(base), random)],
  ];
  for (const [label, adapterPath, toyMerged] of cases) {
    const out = join(tmp, `llama-merged-${label}.gguf`);
    runLlama(exportLora.path, ["-m", base, "--lora", adapterPath, "-o", out, "-t", "1"]);
    const r = compareMerged(readGGUF(out), toyMerged, readLoraAdapter(adapterPath));
    console.log(`# llama-export-lora vs toy (${label}): ${r.merged} merged tensors, max |Δ| ${r.maxDiff.toExponential(2)}, max |Δ|/bound ${r.maxRatio.toFixed(3)}`);
  }
});

/** An adapter of random pairs on a model's matrices, ranks as given (values in ±scale). */
function randomAdapterFor(modelPath: string, ranks: Record<string, number>, alpha: number, scale: number): LoraAdapter {
  const rand = mulberry32(11), model = readGGUF(modelPath);
  const matrices: LoraAdapter["matrices"] = new Map();
  for (const [name, rank] of Object.entries(ranks)) {
    const [cols, rows] = model.tensor(name)!.dims;
    const fill = (n: number) => Float32Array.from({ length: n }, () => scale * (2 * rand() - 1));
    matrices.set(name, { a: fill(rank * cols), b: fill(rows * rank), rows, cols, rank });
  }
  return { alpha, arch: String(model.metadata.get("general.architecture")), matrices };
}

const perplexityTool = llamaTool("llama-perplexity");
const N_CTX = 64, N_CHUNKS = 4;

/** llama-perplexity's estimate: chunks of N_CTX (the first id made BOS), the second half of each scored. */
function llamaPerplexity(args: string[], text: string): number {
  // llama.cpp 0c1e570 logs through a background thread; on a busy machine a run now and then exits
  // (status 0) before its last lines are written. Such a run says nothing, so it is run again.
  let out = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    out = runLlama(perplexityTool.path, [...args, "-f", text, "-c", String(N_CTX), "-b", String(N_CTX), "--chunks", String(N_CHUNKS), "-t", "2", "-fa", "off"]);
    const m = /Final estimate: PPL = ([\d.]+)/.exec(out);
    if (m) return Number(m[1]);
  }
  assert.fail(`no estimate in llama-perplexity's output (3 runs):\n${out.slice(-1000)}`);
}

/** The same protocol through `toy eval --window N_CTX`: the chunks as ids, scored positions picked out. */
function toyPerplexity(model: string, text: string, extra: string[]): number {
  const file = readGGUF(model);
  const ids = tokenizerFromMetadata(file.metadata, model).encode(readFileSync(text, "utf8"));
  const bos = Number(file.metadata.get("tokenizer.ggml.bos_token_id"));
  const chunks = Array.from({ length: N_CHUNKS }, (_, c) => [bos, ...ids.slice(c * N_CTX + 1, (c + 1) * N_CTX)]).flat();
  const r = toy(["eval", model, "--ids", chunks.join(","), "--window", String(N_CTX), "--top-k", "0", "--json", ...extra]);
  assert.equal(r.status, 0, r.stderr);
  const positions = JSON.parse(r.stdout).positions as { logprob: number | null }[];
  let nll = 0, n = 0;
  for (let c = 0; c < N_CHUNKS; c++) for (let j = N_CTX / 2; j < N_CTX - 1; j++) { nll -= positions[c * N_CTX + j].logprob!; n++; }
  return Math.exp(nll / n);
}

test("llama-perplexity --lora scores a text as toy eval --lora does, and as toy's merged model", { skip: perplexityTool.skip || fx.skip }, () => {
  // llama-tiny: F32, untied output, the real Llama 2 tokenizer (so llama.cpp tokenizes the text as toy does).
  const model = join(fx.dir, "models", "llama-tiny.gguf");
  const dir = trainLora(model, join(tmp, "ppl"), ["--targets", "attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down", "--steps", "4"]);
  const random = join(tmp, "random-llama-tiny.lora.gguf");
  writeLoraAdapter(random, randomAdapterFor(model, { "token_embd.weight": 2, "blk.0.attn_q.weight": 3, "blk.1.ffn_down.weight": 5, "output.weight": 4 }, 6, 0.2), "random");
  // Mean NLLs (log perplexities) are compared relative to their size: toy and llama.cpp agree on
  // F32 logits to ≤ 6e-5 (fixtures README), which moved them by ≤ 1.8e-5 here, so 1e-4 leaves a
  // margin of 5; llama.cpp's runtime adapter (W x + s·B(A x)) and its merge differ in rounding only.
  const close = (a: number, b: number, rel: number, what: string) =>
    assert.ok(Math.abs(Math.log(a) - Math.log(b)) <= rel * Math.log(b), `${what}: ${a} vs ${b}`);
  const llamaBase = llamaPerplexity(["-m", model], data), toyBase = toyPerplexity(model, data, []);
  console.log(`# perplexity, base: llama.cpp ${llamaBase}, toy eval ${toyBase.toFixed(4)}`);
  close(toyBase, llamaBase, 1e-4, "base");
  for (const [label, adapter] of [["trained", join(dir, "weights", "adapter.gguf")], ["random, with token_embd and output", random]]) {
    const llamaLora = llamaPerplexity(["-m", model, "--lora", adapter], data);
    const toyLora = toyPerplexity(model, data, ["--lora", adapter]);
    console.log(`# perplexity, ${label}: llama.cpp --lora ${llamaLora}, toy eval --lora ${toyLora.toFixed(4)}`);
    assert.ok(Math.abs(Math.log(llamaLora) - Math.log(llamaBase)) > 0.05, `${label}: the adapter changes llama.cpp's perplexity`);
    close(toyLora, llamaLora, 1e-4, `${label}: toy eval --lora vs llama-perplexity --lora`);
  }
  const llamaOnToyMerge = llamaPerplexity(["-m", join(dir, "weights", "merged.gguf")], data);
  const llamaLora = llamaPerplexity(["-m", model, "--lora", join(dir, "weights", "adapter.gguf")], data);
  console.log(`# perplexity, trained: llama.cpp on toy's merged.gguf ${llamaOnToyMerge}, llama.cpp --lora ${llamaLora}`);
  close(llamaOnToyMerge, llamaLora, 1e-5, "llama.cpp on toy's --merge vs llama.cpp --lora");
});
