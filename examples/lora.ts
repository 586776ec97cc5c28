// LoRA: teach a frozen model a new fact with a small low-rank adapter, saved in llama.cpp's format.
//
// Run it with `npm run example -- lora` (add `--quick` for a few steps). The model is
// $TOY_MODEL, else SmolLM2-135M-Instruct from the shared fixtures, else the model the
// from-scratch example saved.
//
// What happens, in order:
//   1. the lora recipe freezes every weight of the model and puts a pair of small matrices
//      beside each targeted one: W' = W + (alpha / rank) · B A, with B = 0 so training starts
//      exactly at the base model (Hu et al. 2021, "LoRA", arXiv:2106.09685);
//   2. the adapter is trained on one sentence about toy, until the model knows it;
//   3. the adapter alone is saved (a GGUF of a few MB that llama.cpp's --lora also reads);
//   4. the base model plus the adapter is loaded and asked to finish the sentence, next to
//      the base model alone.

import { statSync } from "node:fs";
import { join } from "node:path";
import {
  applyLoraAdapter, loadModelFromFile, lora, readGGUF, selectBackend, tokenizerFromMetadata,
  type Batch, type LanguageModel,
} from "toy";
import { continuation, count, exampleModel, outputDir, pick, quick } from "./lib/setup.js";

// --- 1. Realize the run ---------------------------------------------------------------------------
// Rank 8 on the attention's query and value projections of every layer, as in the paper; only
// A and B train. With so few trainable numbers a larger learning rate than a full fine-tune's
// is fine.
const path = exampleModel();
const steps = pick(24, 3), seed = 0;
const run = lora.realize(path, { rank: 8, alpha: 16, targets: ["attn_q", "attn_v"], steps, lr: 5e-3, schedule: "cosine", seed });
let total = 0, trainable = 0;
for (const [name, v] of run.params.values) (name.includes(".lora_") ? (trainable += v.length) : (total += v.length));
console.log(`model: ${path}${quick ? " (quick mode)" : ""}`);
console.log(`  ${count(total)} frozen parameters; ${run.targets.length} matrices adapted ` +
  `(${run.targets.slice(0, 2).join(", ")}, …), ${count(trainable)} trainable parameters: ${(100 * trainable / total).toFixed(2)}%`);

// --- 2. The lesson ------------------------------------------------------------------------------
// One sentence, as one batch: the inputs are its tokens, the targets the same tokens shifted by
// one (each position learns to predict the next token). It ends with the end-of-text token, so
// that the model also learns to stop after saying it. Every step sees it again.
const tokenizer = tokenizerFromMetadata(run.source.metadata, path);
const fact = "Toy is a machine learning framework written in TypeScript, whose models read like the math.";
const ids = [...tokenizer.encode(fact), ...(tokenizer.eos !== undefined ? [tokenizer.eos] : [])];
const T = ids.length - 1;
const lesson: Batch = { input: Int32Array.from(ids.slice(0, T)), target: Int32Array.from(ids.slice(1)), batch: 1, seq: T };

const device = selectBackend(undefined, { quiet: true });
const prompt = "Toy is a";
const complete = (model: LanguageModel) => continuation(model, tokenizer, prompt, pick(24, 8));   // greedy
const base = loadModelFromFile(run.source, device);
console.log(`\nthe lesson (${T} tokens): ${JSON.stringify(fact)}`);
console.log(`base model, greedy: ${JSON.stringify(complete(base))}`);

// --- 3. Train the adapter -------------------------------------------------------------------------
// The backward pass still runs through the whole network (the gradient has to reach every
// adapter), but only A and B get gradients and AdamW moments: a fraction of the memory and of
// the optimizer's work of the warm-start example.
console.log(`\ntraining the adapter for ${steps} steps on ${device}:`);
const started = performance.now();
const losses: number[] = [];
for (let s = 0; s < steps; s++) {
  const r = run.step(lesson);
  losses.push(r.loss);
  if ((s + 1) % pick(4, 1) === 0 || s === 0) console.log(`  step ${String(s + 1).padStart(2)}  loss ${r.loss.toFixed(3)}  lr ${r.lr.toExponential(1)}`);
}
const final = run.trainer.evaluate(lesson);
console.log(`trained in ${((performance.now() - started) / 1000).toFixed(1)} s; loss on the lesson ${losses[0].toFixed(3)} → ${final.toFixed(3)}`);

// --- 4. Save the adapter, apply it, compare -----------------------------------------------------------
// The adapter file holds only the A and B matrices (`blk.N.attn_q.weight.lora_a` / `.lora_b`)
// and alpha. `applyLoraAdapter` merges them into the base (W + alpha/rank · B A) in memory,
// what `toy infer --lora` does; llama.cpp reads the same file with `--lora`.
const out = outputDir("lora");
const adapterPath = join(out, "adapter.gguf");
run.save(adapterPath);
console.log(`\nadapter: ${adapterPath} (${count(statSync(adapterPath).size)} bytes; the base model's file: ${count(statSync(path).size)} bytes)`);
const adapted = loadModelFromFile(applyLoraAdapter(readGGUF(path), adapterPath), device);
console.log(`base model:          ${JSON.stringify(complete(base))}`);
console.log(`base model + adapter: ${JSON.stringify(complete(adapted))}`);
console.log(`try: npx toy infer ${path} --lora ${adapterPath} --prompt "${prompt}" --temperature 0`);
