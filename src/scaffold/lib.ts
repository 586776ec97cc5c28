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

import {
  add, embedding, feedForward, gatherRows, llamaLikeConfig, matmul, norm, registerArchitecture, selfAttention,
} from "toy";

/**
 * One parallel block: x [T, d] → [T, d]. The rows of several sequences (segments) may share the
 * call; each attends to its own KV cache, layer \`layer\`.
 * @param {import("toy").Tensor} x
 * @param {import("toy").BlockWeights} w
 * @param {import("toy").BlockConfig} c
 * @param {readonly import("toy").Segment[]} segments
 * @param {number} layer
 * @param {Int32Array} positions
 */
export function parallelBlock(x, w, c, segments, layer, positions) {
  if (!w.ffn) throw new Error("parallel: mixture-of-experts blocks are not supported");
  const a = selfAttention(norm(x, w.attnNorm), w.attn, c.attn, segments, layer, positions); // [T, d]
  const f = feedForward(norm(x, w.ffnNorm), w.ffn, c.ffn);                                 // [T, d]
  return add(add(x, a), f);                                                                // [T, d]
}

/** @type {import("toy").Architecture} */
export const parallel = {
  name: "parallel",
  // The same hyperparameters as llama (RoPE on interleaved pairs, RMSNorm, SwiGLU), under "parallel.*".
  config: (file) => llamaLikeConfig(file, "parallel", "interleaved"),
  forward(w, _c, { ids, segments, positions, lastRows, device }) {
    let x = embedding(w.tokenEmbd, ids, device);                                   // [T, d]
    w.blocks.forEach((block, l) => {
      x = parallelBlock(x, block, w.blockConfigs[l], segments, l, positions);      // [T, d]
    });
    if (lastRows) x = gatherRows(x, lastRows);                                     // [S, d]
    return matmul(norm(x, w.outputNorm), w.output);                                // [T | S, vocab]
  },
};

registerArchitecture(parallel);
`;

export const LIB_TEST = `// The parallel architecture on tiny random models written with toy's GGUF writer.

import { test } from "node:test";
import assert from "node:assert/strict";
import { cpuBackend, generate, loadModelFromFile, parseGGUF, supportedArchitectures, DEFAULT_SAMPLING } from "toy";
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
  \`add\`), the \`parallel\` architecture (\`{ name, config(file), forward(weights, config, input) }\`),
  and \`registerArchitecture(parallel)\`. Plain ESM with JSDoc types from toy's declarations
  (\`// @ts-check\`), so there is no build step.
- \`test/parallel.test.mjs\` — with every feed-forward zeroed the architecture equals toy's llama
  on the same weights; with feed-forwards it does not; decoding through the KV cache equals
  recomputing; toy's generation engine runs it, on every backend this machine has.
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
