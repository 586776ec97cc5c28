// Warm start: fine-tune every weight of a pretrained GGUF model on new text, then save it.
//
// Run it with `npm run example -- warm-start` (add `--quick` for two tiny steps). The model is
// $TOY_MODEL, else SmolLM2-135M-Instruct from the shared fixtures, else the model the
// from-scratch example saved. The new text is the stories corpus that ships with toy.
//
// What happens, in order:
//   1. the warmStart recipe loads the GGUF and makes float32 copies of all its weights (a
//      quantized file is dequantized: training needs the full precision);
//   2. we measure the model on held-out stories and see how it tells one;
//   3. a few optimizer steps on the stories, every weight updated by AdamW;
//   4. the result is saved as an F32 GGUF, loaded back and asked for the same story.
//
// A few steps is enough to see the model take on the corpus' style: the stories are written
// from a small grammar, much more predictable than the web text SmolLM2 learned from.

import { join } from "node:path";
import {
  defaultCorpusPath, loadModelFromFile, readCorpus, readGGUF, Rng, selectBackend,
  tokenizerFromMetadata, trainingData, warmStart, type LanguageModel,
} from "toy";
import { continuation, count, exampleModel, outputDir, pick, quick } from "./lib/setup.js";

// --- 1. Realize the run ---------------------------------------------------------------------------
// Fine-tuning wants a small learning rate: the weights are already good, and large steps would
// undo what they know. The cosine schedule lowers it to a tenth by the last step.
const path = exampleModel();
const steps = pick(8, 2), batch = pick(2, 1), seq = pick(48, 16), seed = 0;
const run = warmStart.realize(path, { steps, lr: 1e-4, schedule: "cosine", seed });
let parameterCount = 0;
for (const v of run.params.values.values()) parameterCount += v.length;
console.log(`model: ${path}\n  ${run.config.arch}, ${run.config.nLayer} layers, width ${run.config.nEmbd}: ` +
  `${count(parameterCount)} parameters, all of them trained${quick ? " (quick mode)" : ""}`);

// --- 2. The data, and the model before --------------------------------------------------------------
// The text is tokenized with the model's own tokenizer (from the GGUF's metadata). The first
// 60,000 characters are plenty for a few steps; their last 10% is held out for validation.
const tokenizer = tokenizerFromMetadata(run.source.metadata, path);
const corpusPath = defaultCorpusPath();
const tokens = Int32Array.from(tokenizer.encode(readCorpus(corpusPath).slice(0, 60_000)));
const data = trainingData(tokens, corpusPath, { batch, seq, seed }, new Rng(seed));
const validation = data.validation!;
console.log(`data: the first 60,000 characters of ${corpusPath}: ${tokens.length} tokens, ${data.validationTokens} held out`);

const device = selectBackend(undefined, { quiet: true });
const prompt = "Once upon a time, there was a";
const story = (model: LanguageModel) => continuation(model, tokenizer, prompt, pick(40, 12));   // greedy
const before = run.trainer.evaluate(validation);
console.log(`\nbefore: validation loss ${before.toFixed(3)}; greedy story:\n  ${JSON.stringify(story(loadModelFromFile(run.source, device)))}`);

// --- 3. Train -----------------------------------------------------------------------------------
// Each step: forward and backward through the whole model, the gradient clipped to norm 1,
// and an AdamW update of every parameter (that, and keeping AdamW's two moments for each of
// them, is what makes a full fine-tune heavy: LoRA, in the lora example, trains far fewer).
console.log(`\ntraining ${steps} steps of ${batch} × ${seq} tokens on ${device}:`);
const started = performance.now();
for (let s = 0; s < steps; s++) {
  const r = run.step(data.nextBatch());
  console.log(`  step ${String(r.step + 1).padStart(2)}  loss ${r.loss.toFixed(3)}  |gradient| ${r.gradNorm.toFixed(2)}  lr ${r.lr.toExponential(1)}  ${(r.tokens / r.seconds).toFixed(0)} tokens/s`);
}
const after = run.trainer.evaluate(validation);
console.log(`trained in ${((performance.now() - started) / 1000).toFixed(1)} s; validation loss ${before.toFixed(3)} → ${after.toFixed(3)}`);

// --- 4. Save, load back, compare ----------------------------------------------------------------------
// The checkpoint keeps the source's metadata (architecture, tokenizer, chat template) and
// tensor names, with every tensor in F32: toy, llama.cpp and any GGUF reader load it.
const out = outputDir("warm-start");
const modelPath = join(out, "model.gguf");
run.save(modelPath);
const tuned = loadModelFromFile(readGGUF(modelPath), device);
console.log(`\nafter (${modelPath}): greedy story:\n  ${JSON.stringify(story(tuned))}`);
