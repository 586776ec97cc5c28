// Train a small language model from scratch, on the stories corpus that ships with toy.
//
// Run it with `npm run example -- from-scratch` (add `--quick` for a much smaller run).
//
// What happens, in order:
//   1. the fromScratch recipe builds a Llama-shaped model with seeded random weights;
//   2. the corpus is tokenized (one token per byte) and cut into random training windows, with
//      the last 10% held out to measure how well the model does on text it never trained on;
//   3. we look at what the untrained model writes, then train it step by step;
//   4. the trained model is saved as a GGUF file, loaded back like any other model, and asked
//      for a story again; the loss curve is drawn to an SVG picture.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  defaultCorpusPath, fromScratch, loadModelFromFile, lossCurveSvg, readCorpus, readGGUF, Rng,
  SCRATCH_CONFIGS, selectBackend, tokenizerFromMetadata, trainingData, type CurvePoint, type LanguageModel,
} from "toy";
import { continuation, count, outputDir, pick, quick } from "./lib/setup.js";

// --- 1. The model -------------------------------------------------------------------------------
// A recipe turns a description into something trainable: `realize(config, options)` gives a run
// whose `step(batch)` takes one optimizer step. "small" is a Llama with 4 layers of width 128;
// the quick mode trains "nano" (2 layers of width 32) instead. The seed fixes the initial weights
// and, below, the order of the training windows: the same seed gives the same bits every time.
const configName = pick("small", "nano");
const steps = pick(250, 40);
const batch = 4, seq = pick(128, 32);
const seed = 0;
const run = fromScratch.realize(configName, { steps, lr: 3e-3, warmup: 10, schedule: "cosine", seed });

const shape = SCRATCH_CONFIGS[configName];
let parameterCount = 0;
for (const v of run.params.values.values()) parameterCount += v.length;
console.log(`model: "${configName}", ${shape.nLayer} layers, width ${shape.nEmbd}, ${shape.nHead} heads, ` +
  `context ${shape.contextLength}: ${count(parameterCount)} parameters${quick ? " (quick mode)" : ""}`);

// --- 2. The data --------------------------------------------------------------------------------
// The model's vocabulary is the 256 bytes plus a few control tokens, so any text encodes. Every
// training batch is `batch` windows of `seq` tokens at random places in the first 90% of the
// corpus; the validation batch is a fixed set of windows from the last 10%.
const tokenizer = tokenizerFromMetadata(run.source.metadata, "<from-scratch>");
const corpusPath = defaultCorpusPath();
const tokens = Int32Array.from(tokenizer.encode(readCorpus(corpusPath)));
const data = trainingData(tokens, corpusPath, { batch, seq, seed }, new Rng(seed));
console.log(`data: ${corpusPath}, ${tokens.length} tokens (${data.trainTokens} to train on, ${data.validationTokens} held out)`);
const validation = data.validation!;

// A story from a model: sampled at temperature 0.8 with a fixed seed, so it is the same each run.
const device = selectBackend(undefined, { quiet: true });
const prompt = "Once upon a time, there was";
const story = (model: LanguageModel) => continuation(model, tokenizer, prompt, pick(160, 48), 0.8);

// Shown indented, with bytes that are not printable text (what random weights emit) as "·".
const show = (text: string) => "  " + text.replace(/[\u0000-\u0009\u000b-\u001f\u007f\ufffd]/g, "·").replace(/\n/g, "\n  ");

// --- 3. Before and during training --------------------------------------------------------------
// `run.source` is the untrained model as an in-memory GGUF file; the trainer works on float32
// copies of its tensors, so the file still holds the random weights. A model that knows nothing
// spreads its bets over all 260 tokens: a loss of ln(260) ≈ 5.56 nats per token.
const untrained = run.trainer.evaluate(validation);
console.log(`\nuntrained model, validation loss ${untrained.toFixed(3)}:`);
console.log(show(story(loadModelFromFile(run.source, device))));

console.log(`\ntraining ${steps} steps of ${batch} × ${seq} tokens on ${device}:`);
const train: CurvePoint[] = [], held: CurvePoint[] = [{ step: 0, loss: untrained }];
const every = Math.max(1, Math.round(steps / 10));
const started = performance.now();
let tokensSeen = 0;
for (let s = 0; s < steps; s++) {
  const r = run.step(data.nextBatch());     // forward, backward, clip, AdamW: one step
  tokensSeen += r.tokens;
  train.push({ step: r.step + 1, loss: r.loss });
  if ((s + 1) % every === 0 || s + 1 === steps) {
    const val = run.trainer.evaluate(validation);
    held.push({ step: s + 1, loss: val });
    const rate = tokensSeen / ((performance.now() - started) / 1000);
    console.log(`  step ${String(s + 1).padStart(4)}  loss ${r.loss.toFixed(3)}  validation ${val.toFixed(3)}  lr ${r.lr.toExponential(1)}  ${rate.toFixed(0)} tokens/s`);
  }
}
const seconds = (performance.now() - started) / 1000;
console.log(`trained in ${seconds.toFixed(1)} s; validation loss ${held[0].loss.toFixed(3)} → ${held.at(-1)!.loss.toFixed(3)}`);

// --- 4. Save, load back, look ---------------------------------------------------------------------
// The checkpoint is an ordinary F32 GGUF with the tokenizer inside: `toy infer`, `toy eval`,
// `toy describe` and llama.cpp all read it. Loading it back is exactly how any model is loaded.
const out = outputDir("from-scratch");
const modelPath = join(out, "model.gguf");
run.save(modelPath);
const trained = loadModelFromFile(readGGUF(modelPath), device);
console.log(`\ntrained model (${modelPath}):`);
console.log(show(story(trained)));

const picture = join(out, "loss.svg");
writeFileSync(picture, lossCurveSvg(train, held, `from scratch: ${configName}, lr 3e-3`));
console.log(`\nloss curve: ${picture}`);
console.log(`try: npx toy infer ${modelPath} --prompt "Once upon a time, there was" --max-tokens 200`);
