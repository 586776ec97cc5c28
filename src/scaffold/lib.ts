// `toy new NAME --lib`: a library that adds its own architecture to toy through the public API
// (a parallel-residual block built from toy's blocks, registered with registerArchitecture), and
// tests it against toy's llama on tiny models it writes with toy's GGUF writer.

export const LIB_INDEX = `// @ts-check
// {{name}}: a parallel-residual decoder for toy, as in GPT-J and GPT-NeoX. Attention and the
// feed-forward both read the block's input and both add to it:
//
//   x ← x + Attn(norm₁(x)) + FFN(norm₂(x))          (llama: x ← x + Attn(norm₁(x)); x ← x + FFN(norm₂(x)))
//
// Importing this module registers the architecture: GGUF files whose general.architecture is
// "parallel" (hyperparameters under "parallel.*", llama's tensor names) then load with toy's
// loadModel, run on every backend, decode through the KV cache, and serve.

import { blockConfigs, blockNames, feedForward, llamaLikeConfig, norm, registerArchitecture, selfAttention, TENSORS } from "toy";

/**
 * One parallel block: x [T, d] → [T, d], layer \`l\`, on either run of the forward (inference:
 * Tensors and the KV cache; training: Vars on the tape).
 * @template {import("toy").Value} X
 * @param {import("toy").Ops<X>} ops
 * @param {X} x
 * @param {import("toy").BlockConfig} c
 * @param {number} l
 * @returns {X}
 */
export function parallelBlock(ops, x, c, l) {
  if (c.ffn.experts > 0) throw new Error("parallel: mixture-of-experts blocks are not supported");
  const n = blockNames(l);
  const a = selfAttention(ops, norm(ops, x, n.attnNorm, c.norm), n, c.attn, l);                          // [T, d]
  const f = feedForward(ops, norm(ops, x, n.ffnNorm, c.norm), { gate: n.ffnGate, up: n.ffnUp, down: n.ffnDown }, c.ffn.kind); // [T, d]
  return ops.add(ops.add(x, a), f);                                                                     // [T, d]
}

/** @type {import("toy").Architecture} */
export const parallel = {
  name: "parallel",
  // The same hyperparameters as llama (RoPE on interleaved pairs, RMSNorm, SwiGLU), under "parallel.*".
  config: (file) => llamaLikeConfig(file, "parallel", "interleaved"),
  forward(ops, c, ids) {
    let x = ops.embedding(TENSORS.tokenEmbd, ids);                                 // [T, d]
    blockConfigs(c).forEach((layer, l) => {
      x = parallelBlock(ops, x, layer, l);                                         // [T, d]
    });
    x = ops.lastRows(x);                                                           // [S, d]
    return ops.linear(norm(ops, x, TENSORS.outputNorm, c.norm), c.tiedOutput ? TENSORS.tokenEmbd : TENSORS.output.weight); // [T | S, vocab]
  },
};

registerArchitecture(parallel);
`;

export const LIB_TEST = `// The parallel architecture on tiny random models written with toy's GGUF writer.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  cpuBackend, generate, loadModelFromFile, parametersFromFile, parseGGUF, supportedArchitectures, Trainer, DEFAULT_SAMPLING, DEFAULT_TRAIN_OPTIONS,
} from "toy";
import { parallel } from "../index.mjs";
import { tinyModel } from "./tiny-model.mjs";

const devices = ["ts", ...("error" in cpuBackend() ? [] : ["cpu"])];
const ids = Int32Array.from([1, 40, 300, 7, 99, 12, 5]);
const load = (device, opts) => loadModelFromFile(parseGGUF(tinyModel(opts), "tiny.gguf"), device);
const logits = (model) => model.forward(ids, model.newCache(), "all").data;

function maxDifference(a, b) {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

test("importing the package registers the architecture", () => {
  assert.ok(supportedArchitectures().includes(parallel.name));
  assert.equal(load("ts", { arch: "parallel" }).arch, "parallel");
});

for (const device of devices) {
  test("with no feed-forward, a parallel block is a llama block (" + device + ")", () => {
    const p = logits(load(device, { arch: "parallel", zeroFeedForward: true }));
    const l = logits(load(device, { arch: "llama", zeroFeedForward: true }));
    assert.ok(maxDifference(p, l) < 1e-5);
  });

  test("with a feed-forward, the two differ (" + device + ")", () => {
    const p = logits(load(device, { arch: "parallel" }));
    const l = logits(load(device, { arch: "llama" }));
    assert.ok(maxDifference(p, l) > 1e-3);
  });

  test("decoding through the KV cache equals recomputing the sequence (" + device + ")", () => {
    const model = load(device, { arch: "parallel" });
    const all = logits(model);
    const cache = model.newCache();
    const stepwise = new Float32Array(all.length);
    ids.forEach((id, t) => stepwise.set(model.forward(Int32Array.of(id), cache, "last").data, t * model.nVocab));
    assert.ok(maxDifference(all, stepwise) < 1e-4);
  });

  test("toy's engines run it: greedy generation is deterministic (" + device + ")", () => {
    const model = load(device, { arch: "parallel" });
    const opts = { maxTokens: 8, sampling: { ...DEFAULT_SAMPLING, temperature: 0 } };
    const a = generate(model, [...ids], opts).tokens, b = generate(model, [...ids], opts).tokens;
    assert.equal(a.length, 8);
    assert.deepEqual(a, b);
  });
}

test("the same forward trains: a few AdamW steps on one batch lower the loss", () => {
  const model = load("ts", { arch: "parallel" });
  const trainer = new Trainer(model.config, parametersFromFile(model.file), { ...DEFAULT_TRAIN_OPTIONS, steps: 6, lr: 1e-2, schedule: "constant" });
  const batch = { input: ids.subarray(0, 6), target: ids.subarray(1, 7), batch: 1, seq: 6 };
  const losses = Array.from({ length: 6 }, () => trainer.step(batch).loss);
  assert.ok(losses[5] < losses[0], losses.join(", "));
});
`;

export const LIB_README = `# {{name}}

A library for [toy]({{toyPath}}): it adds a **parallel-residual** decoder architecture (GPT-J,
GPT-NeoX), built from toy's own blocks and registered through toy's public API:

\`\`\`
x ← x + Attn(norm₁(x)) + FFN(norm₂(x))        llama: x ← x + Attn(norm₁(x));  x ← x + FFN(norm₂(x))
\`\`\`

\`\`\`js
import "{{name}}";                        // registers the "parallel" architecture
import { loadModel, selectBackend } from "toy";
const model = loadModel("model.gguf", selectBackend());   // general.architecture = "parallel"
\`\`\`

- \`index.mjs\` — \`parallelBlock\` (one block, from toy's \`selfAttention\`, \`feedForward\`, \`norm\`,
  \`ops.add\`), the \`parallel\` architecture (\`{ name, config(file), forward(ops, config, ids) }\`),
  and \`registerArchitecture(parallel)\`. Plain ESM with JSDoc types from toy's declarations
  (\`// @ts-check\`), so there is no build step.
- \`test/parallel.test.mjs\` — with every feed-forward zeroed the architecture equals toy's llama
  on the same weights; with feed-forwards it does not; decoding through the KV cache equals
  recomputing; toy's generation engine runs it, on every backend this machine has; toy's
  \`Trainer\` trains it (the same forward, on the autograd tape).
- \`test/tiny-model.mjs\` — the tiny random GGUF models those tests load, written with toy's
  \`encodeGGUF\`.

\`\`\`sh
npm install
npm test
\`\`\`

toy is linked from its checkout (\`"toy": "file:…"\` in package.json); \`.npmrc\` keeps
\`npm install\` from rebuilding it. How to write blocks and architectures: toy's
\`docs/authoring.md\`.
`;
