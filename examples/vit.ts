// Train a Vision Transformer to read handwritten digits (MNIST, or drawn digits offline), then classify with it.
//
// Run it with `npm run example -- vit` (add `--quick` for a much smaller run, `--synthetic` to
// use the drawn digits even when MNIST is there).
//
// What happens, in order:
//   1. the images: MNIST's digits from ../shared/data/mnist (or $TOY_MNIST), standardized with
//      the training split's mean and std; without MNIST, digits drawn here in code;
//   2. the vitTiny recipe builds a ViT with seeded random weights: every image is cut into 7×7
//      patches, each patch becomes a token, a class token goes in front, and a transformer
//      encoder mixes them; the class token's final state picks one of the 10 classes;
//   3. we measure the untrained model on the held-out images, then train it step by step;
//   4. the accuracy again, and the confusion matrix: which digits it takes for which;
//   5. the trained model is saved as a GGUF file, loaded back like any other model, and asked
//      what a few held-out images are; the loss curve is drawn to an SVG picture.

import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  classify, formatConfusion, ImageBatches, imageSize, loadMnistDir, loadVisionModel, lossCurveSvg, patchCount,
  readGGUF, Rng, selectBackend, standardize, vitConfigFor, vitTiny,
  type CurvePoint, type ImageSet, type ImageSplit,
} from "toy";
import { count, outputDir, pick, quick } from "./lib/setup.js";

// --- 1. The images ------------------------------------------------------------------------------
// MNIST's files are not shipped with toy. The shared data folder has its 10,000 test digits
// (t10k-*-idx*-ubyte.gz): loadMnistDir trains on the first 8,000 and holds out the last 2,000.
// $TOY_MNIST names another folder of MNIST's files; else they are looked for beside the shared
// fixtures, as the other examples look for their model.
const mnistCandidates = [
  process.env.TOY_FIXTURES && join(process.env.TOY_FIXTURES, "..", "data", "mnist"),
  join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "shared", "data", "mnist"), // dist/examples/ → ../shared
].filter((p): p is string => typeof p === "string");
const mnist = process.argv.includes("--synthetic") ? undefined
  : process.env.TOY_MNIST ?? asTyped(mnistCandidates.find((p) => existsSync(p))); // a wrong $TOY_MNIST fails loudly below
/** A found folder as one would type it: relative to here when that is shorter (../shared/data/mnist). */
function asTyped(p: string | undefined): string | undefined {
  return p && (relative(process.cwd(), p).length < p.length ? relative(process.cwd(), p) : p);
}

// Without MNIST the example still runs, anywhere, on digits it draws itself: each one the
// seven-segment shape of its class (a clock's digits), drawn with a random size, place, slant,
// stroke width and wobble, on a dark background with a little noise — 28×28, white on black,
// like MNIST's. Easier than handwriting, but a model still has to learn which strokes where
// make which digit, wherever in the picture they are.
const SEGMENTS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"];
function drawDigits(n: number, seed: number): ImageSet {
  const rng = new Rng(seed), H = 28, W = 28;
  const pixels = new Float32Array(n * H * W), labels = new Int32Array(n);
  const uniform = (lo: number, hi: number) => lo + (hi - lo) * rng.next();
  for (let i = 0; i < n; i++) {
    const digit = i % 10, w = uniform(7, 12), h = uniform(13, 19), slant = uniform(-0.25, 0.25);
    const cx = uniform(11, 17), cy = uniform(11, 17), thick = uniform(0.9, 1.8);
    // The segment ends: corners of the box (u across, v down, both −1 … 1), each moved a little.
    const corner = (u: number, v: number): [number, number] =>
      [cx + (u * w) / 2 - slant * v * (h / 2) + uniform(-0.8, 0.8), cy + (v * h) / 2 + uniform(-0.8, 0.8)];
    const [tl, tr, ml, mr, bl, br] = [corner(-1, -1), corner(1, -1), corner(-1, 0), corner(1, 0), corner(-1, 1), corner(1, 1)];
    const ends: Record<string, [number, number][]> = { a: [tl, tr], b: [tr, mr], c: [mr, br], d: [bl, br], e: [ml, bl], f: [tl, ml], g: [ml, mr] };
    const strokes = [...SEGMENTS[digit]].map((s) => ends[s]);
    const image = pixels.subarray(i * H * W, (i + 1) * H * W);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        // Ink falls off linearly over the last pixel of the stroke's half-width: anti-aliased edges.
        const d = Math.min(...strokes.map(([p, q]) => distanceToSegment(x, y, p, q)));
        image[y * W + x] = Math.min(1, Math.max(0, Math.max(0, thick - d + 0.5) + 0.08 * rng.next()));
      }
    }
    labels[i] = digit;
  }
  return { count: n, height: H, width: W, channels: 1, pixels, labels, classes: SEGMENTS.map((_, k) => String(k)), normalization: null };
}
function distanceToSegment(x: number, y: number, [px, py]: [number, number], [qx, qy]: [number, number]): number {
  const dx = qx - px, dy = qy - py;
  const t = Math.max(0, Math.min(1, ((x - px) * dx + (y - py) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(x - px - t * dx, y - py - t * dy);
}

// Both are standardized the same way: per channel, with the training split's mean and std (which
// the checkpoint keeps, so that whoever loads the model can prepare new images alike).
// The quick mode takes 1,000 images to train on and 200 to evaluate.
const trainCount = pick(8000, 1000), evalCount = pick(2000, 200);
const data: ImageSplit = mnist
  ? loadMnist(mnist)
  : { ...standardize(drawDigits(trainCount, 1), drawDigits(evalCount, 2), true), description: "digits drawn by examples/vit.ts (MNIST not found: set TOY_MNIST to a folder of its files)" };
function loadMnist(dir: string): ImageSplit {
  try {
    return loadMnistDir(dir, quick ? { trainCount, evalCount } : {});
  } catch (e) {
    // A folder was named (or found) and is not MNIST: say which and why, and stop (a usage error).
    console.error(`MNIST from ${dir}${process.env.TOY_MNIST ? " ($TOY_MNIST)" : ""}: ${(e as Error).message}`);
    process.exit(2);
  }
}
console.log(`data: ${data.description}`);
console.log(`  ${data.train.count} images to train on, ${data.eval.count} held out; ${data.train.height}×${data.train.width}, ` +
  `${data.train.channels} channel, mean ${data.normalization!.mean[0].toFixed(4)}, std ${data.normalization!.std[0].toFixed(4)}`);

// An image in the terminal: one character per pixel, darker to brighter. The pixels are
// standardized; undoing that gives back the [0, 1] ink.
function ascii(set: ImageSet, i: number): string[] {
  const { mean, std } = set.normalization!, W = set.width, size = imageSize(set);
  const ramp = " .:-=+*#%@", rows: string[] = [];
  for (let y = 0; y < set.height; y++) {
    let row = "";
    for (let x = 0; x < W; x++) {
      const ink = set.pixels[i * size + y * W + x] * std[0] + mean[0];
      row += ramp[Math.max(0, Math.min(ramp.length - 1, Math.floor(ink * ramp.length)))];
    }
    rows.push(row);
  }
  return rows;
}

// --- 2. The model -------------------------------------------------------------------------------
// vitConfigFor takes a named shape and the images' size, channels and class count. "tiny" is
// what `toy train vit` trains (d = 64, 4 layers, 4 heads); the quick mode builds "nano"
// (d = 32, 2 layers, 2 heads). The seed fixes the initial weights and the order of the batches.
const configName = pick("tiny", "nano");
const config = vitConfigFor(data.train, configName);
const steps = pick(800, 150), batchSize = pick(64, 32), lr = pick(4e-3, 5e-3), seed = 0;
const device = selectBackend(undefined, { quiet: true });
const run = vitTiny.realize(config, {
  steps, lr, warmup: pick(40, 10), schedule: "cosine", weightDecay: 0.05, seed, backend: device,
  classes: data.train.classes, normalization: data.normalization, // both go into the checkpoint
});

let parameterCount = 0;
for (const v of run.params.values.values()) parameterCount += v.length;
const P = config.patchSize, n = patchCount(config);
console.log(`\nmodel: ViT "${configName}": ${count(parameterCount)} parameters${quick ? " (quick mode)" : ""}`);
console.log(`  each ${config.height}×${config.width} image is cut into ${n} patches of ${P}×${P} = ${P * P * config.channels} pixels (a ${config.width / P}×${config.height / P} grid);`);
console.log(`  each patch becomes a token of width ${config.nEmbd}; with the class token in front, ${n + 1} tokens go through`);
console.log(`  ${config.nLayer} encoder layers (${config.nHead} heads, MLP ${config.nFF}), every token attending to every other;`);
console.log(`  the class token's final state gives ${config.nClasses} logits, one per class`);

// --- 3. Before and during training --------------------------------------------------------------
// evaluate() runs the inference forward over the held-out set: the accuracy, the mean loss, and
// the confusion matrix. An untrained model guesses: about 1 in 10, a loss near ln(10) ≈ 2.30.
const before = run.evaluate(data.eval);
console.log(`\nuntrained: accuracy ${percent(before.accuracy)}, held-out loss ${before.loss.toFixed(3)}`);

// Batches come in a seeded random order, each image shifted by up to one pixel in each
// direction (augmentation: a digit is the same digit a pixel to the left).
const batches = new ImageBatches(data.train, { batchSize, seed, augment: { maxShift: 1 } });
const epochs = (steps * batchSize) / data.train.count;
console.log(`\ntraining ${steps} steps of ${batchSize} images (${epochs.toFixed(1)} epochs) on ${device}, AdamW lr ${lr} with a cosine schedule:`);
const train: CurvePoint[] = [], held: CurvePoint[] = [{ step: 0, loss: before.loss }];
const every = Math.max(1, Math.round(steps / 5));
const started = performance.now();
for (let s = 0; s < steps; s++) {
  const r = run.step(batches.next());     // forward, backward, clip, AdamW: one step
  train.push({ step: s + 1, loss: r.loss });
  if ((s + 1) % every === 0 || s + 1 === steps) {
    const e = run.evaluate(data.eval);
    held.push({ step: s + 1, loss: e.loss });
    const rate = ((s + 1) * batchSize) / ((performance.now() - started) / 1000);
    console.log(`  step ${String(s + 1).padStart(4)}  loss ${r.loss.toFixed(3)}  held-out loss ${e.loss.toFixed(3)}  accuracy ${percent(e.accuracy).padStart(6)}  ${rate.toFixed(0)} images/s`);
  }
}
const seconds = (performance.now() - started) / 1000;

// --- 4. How well it does now ----------------------------------------------------------------------
// Row: the true class; column: what the model said. The diagonal is right, the rest are mistakes.
const after = run.evaluate(data.eval);
console.log(`trained in ${seconds.toFixed(1)} s; accuracy ${percent(before.accuracy)} → ${percent(after.accuracy)} (${after.correct} of ${after.count} held-out images)`);
console.log(`\nconfusion matrix (rows: true class, columns: predicted):\n${formatConfusion(after)}`);

// --- 5. Save, load back, classify -----------------------------------------------------------------
// The checkpoint is an F32 GGUF (general.architecture = vit) with the class names and the
// standardization inside: `toy eval`, `toy describe` and loadVisionModel read it. Loaded back it
// must give exactly the same answers.
const out = outputDir("vit");
const modelPath = join(out, "vit.gguf");
run.save(modelPath);
const model = loadVisionModel(readGGUF(modelPath), device);
const reloaded = classify(model, data.eval);
console.log(`saved ${modelPath}; loaded back: accuracy ${percent(reloaded.accuracy)}, ${reloaded.correct === after.correct ? "the same" : "NOT the same"} as before saving`);

// The held-out images through the loaded model, all in one batch: forward gives one row of
// logits per image; softmax turns a row into probabilities, the largest is the answer.
const logits = model.forward(data.eval.pixels, data.eval.count).data, K = model.classes.length;
const guesses = Array.from({ length: data.eval.count }, (_, i) => {
  const z = logits.subarray(i * K, (i + 1) * K), max = Math.max(...z);
  const sum = z.reduce((a, v) => a + Math.exp(v - max), 0);
  return { truth: data.eval.classes[data.eval.labels[i]], label: model.classes[z.indexOf(max)], p: 1 / sum };
});
const shown = guesses.slice(0, 8);
console.log(`\nthe first ${shown.length} held-out images:`);
shown.forEach((g, i) => console.log(`  image ${i}: true ${g.truth}, predicted ${g.label} (${percent(g.p)})${g.label === g.truth ? "" : "  ✗"}`));

// Drawn side by side: the first held-out image the model gets right and the first it gets wrong.
const right = guesses.findIndex((g) => g.label === g.truth), wrong = guesses.findIndex((g) => g.label !== g.truth);
const pictures = [right, wrong].filter((i) => i >= 0).map((i) => ({
  rows: ascii(data.eval, i), caption: `#${i}: true ${guesses[i].truth}, predicted ${guesses[i].label} (${percent(guesses[i].p)})`,
}));
console.log("");
const column = Math.max(data.eval.width + 4, ...pictures.map((pic) => pic.caption.length + 2));
console.log(pictures.map((pic) => pic.caption.padEnd(column)).join("").trimEnd());
for (let y = 0; y < data.eval.height; y++) console.log(pictures.map((pic) => `|${pic.rows[y]}|`.padEnd(column)).join("").trimEnd());

const picture = join(out, "loss.svg");
writeFileSync(picture, lossCurveSvg(train, held, `ViT ${configName} on ${mnist ? "MNIST" : "drawn digits"}, lr ${lr}`));
console.log(`\nloss curve: ${picture}`);
console.log(`try: npx toy eval ${modelPath} --data ${mnist ?? "DIR"}   ·   npx toy describe ${modelPath}`);
console.log(`the full run (2,500 steps, 98.5% on MNIST's held-out digits, 6–9 minutes): npx toy train vit --data ${mnist ?? "DIR"}`);

function percent(x: number): string {
  return `${(100 * x).toFixed(2)}%`;
}
