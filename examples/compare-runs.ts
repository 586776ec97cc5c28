// Compare two training runs: the same model and data at two learning rates, both loss curves in one picture.
//
// Run it with `npm run example -- compare-runs` (add `--quick` for shorter runs).
//
// What happens, in order:
//   1. two from-scratch runs are made identical in everything but the learning rate: the same
//      seed gives them the same initial weights and the same training windows in the same order;
//   2. each is trained, its training loss recorded at every step and its validation loss at
//      regular intervals;
//   3. both curves are drawn in one SVG picture, and the final losses compared.
//
// Holding all else equal is what makes the comparison mean something: any difference between
// the curves is the learning rate's doing, not the luck of the initialization or of the data.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  defaultCorpusPath, fromScratch, lossCurvesSvg, readCorpus, Rng, tokenizerFromMetadata, trainingData,
  type CurvePoint, type CurveSeries,
} from "toy";
import { outputDir, pick, quick } from "./lib/setup.js";

const configName = pick("tiny", "nano");
const steps = pick(300, 40), batch = 4, seq = pick(64, 32), seed = 0;
const learningRates = [3e-3, 3e-4];
console.log(`two runs of "${configName}" from scratch, ${steps} steps of ${batch} × ${seq} tokens, learning rates ${learningRates.join(" and ")}${quick ? " (quick mode)" : ""}`);

// The corpus, tokenized once (the byte vocabulary is the same for both runs).
const corpusPath = defaultCorpusPath();
const text = readCorpus(corpusPath);

// --- 1 and 2. One run ---------------------------------------------------------------------------------
// Everything a run depends on comes from `seed`: realize() draws the initial weights from it,
// and a fresh Rng(seed) draws the training windows. The validation windows have their own fixed
// seed inside trainingData, so both runs are measured on the very same held-out text.
function train(lr: number): CurveSeries {
  const run = fromScratch.realize(configName, { steps, lr, warmup: 10, schedule: "cosine", seed });
  const tokenizer = tokenizerFromMetadata(run.source.metadata, "<from-scratch>");
  const data = trainingData(Int32Array.from(tokenizer.encode(text)), corpusPath, { batch, seq, seed }, new Rng(seed));
  const trainCurve: CurvePoint[] = [], validation: CurvePoint[] = [{ step: 0, loss: run.trainer.evaluate(data.validation!) }];
  const every = Math.max(1, Math.round(steps / 10));
  const started = performance.now();
  for (let s = 0; s < steps; s++) {
    const r = run.step(data.nextBatch());
    trainCurve.push({ step: s + 1, loss: r.loss });
    if ((s + 1) % every === 0 || s + 1 === steps) validation.push({ step: s + 1, loss: run.trainer.evaluate(data.validation!) });
  }
  const last = validation.at(-1)!.loss;
  console.log(`  lr ${lr.toExponential(0)}: validation loss ${validation[0].loss.toFixed(3)} → ${last.toFixed(3)} ` +
    `(training loss, mean of the last 10 steps: ${(trainCurve.slice(-10).reduce((a, p) => a + p.loss, 0) / Math.min(10, trainCurve.length)).toFixed(3)}) ` +
    `in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { label: `lr ${lr.toExponential(0)}`, train: trainCurve, validation };
}

const runs = learningRates.map(train);

// --- 3. One picture ---------------------------------------------------------------------------------
// lossCurvesSvg draws any number of runs on shared axes, one colour each: the faint line is the
// loss of every step (noisy: each step sees different windows), the bold one its running mean,
// the dashed one with dots the validation loss.
const out = outputDir("compare-runs");
const picture = join(out, "loss.svg");
writeFileSync(picture, lossCurvesSvg(runs, `"${configName}" from scratch: ${runs.map((r) => r.label).join(" vs ")}`));
console.log(`\nboth loss curves: ${picture}`);

const finals = runs.map((r) => r.validation!.at(-1)!.loss);
const best = finals.indexOf(Math.min(...finals));
console.log(`lower validation loss after ${steps} steps: ${runs[best].label} (${finals[best].toFixed(3)} against ${finals[1 - best].toFixed(3)})`);
