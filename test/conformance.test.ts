// Every fixture model against the reference outputs: prompt logits (top-16 and logsumexp),
// top-1 at every prompt position and the greedy continuation, on every available backend.
// Which reference a backend follows, and the tolerances: test/helpers/tolerances.ts.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadModel } from "../src/archs/index.js";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import { generate } from "../src/engines/generate.js";
import { DEFAULT_SAMPLING } from "../src/engines/sampling.js";
import { logSumExp } from "../src/primitives/index.js";
import { fixtures } from "./helpers/fixtures.js";
import { assertGreedy, assertTop1, loadRef, maxLogitError } from "./helpers/refs.js";
import { tolerance } from "./helpers/tolerances.js";

const fx = fixtures();
const MODELS = [
  "stories260K", "llama-tiny", "llama3-tiny",
  "llama-q-src", "llama-q-F16", "llama-q-BF16", "llama-q-Q8_0", "llama-q-Q4_0", "llama-q-Q4_1", "llama-q-Q5_0",
  "llama-q-Q5_1", "llama-q-Q2_K", "llama-q-Q3_K_M", "llama-q-Q4_K_M", "llama-q-Q5_K_M", "llama-q-Q6_K",
  "llama-q-IQ4_NL", "llama-q-IQ4_XS",
  "gpt2-tiny", "qwen2-tiny", "qwen3-tiny", "gemma2-tiny", "olmoe-tiny",
];
const devices: Device[] = ["ts", ...("error" in cpuBackend() ? [] : (["cpu"] as Device[]))];
const greedy = { ...DEFAULT_SAMPLING, temperature: 0 };

for (const device of devices) {
  for (const name of MODELS) {
    test(`${name} on ${device} matches the reference`, { skip: fx.skip }, () => {
      const tol = tolerance(name, device);
      const engine = tol.engine;
      const ref = loadRef(fx.dir, engine, name)!;
      const model = loadModel(join(fx.dir, "models", `${name}.gguf`), device);
      const cache = model.newCache();
      const logits = model.forward(Int32Array.from(ref.prompt), cache, "all");
      const row = (i: number) => logits.data.subarray(i * model.nVocab, (i + 1) * model.nVocab);
      const err = maxLogitError(ref, row, (i) => logSumExp(row(i)));
      console.log(`# ${name} ${device} vs ${engine}: max |Δlogit| ${err.toExponential(2)} (tolerance ${tol.logits})`);
      assert.ok(err <= tol.logits, `${name} on ${device}: max |Δlogit| ${err} > ${tol.logits}`);
      assertTop1(ref, row, tol.margin, `${name} ${device}`);
      const out = generate(model, ref.prompt, { maxTokens: ref.greedy.length, sampling: greedy });
      const n = assertGreedy(ref, out.tokens, tol.margin, `${name} ${device}`);
      console.log(`# ${name} ${device}: greedy equal for ${n}/${ref.greedy.length} steps`);
    });
  }
}
