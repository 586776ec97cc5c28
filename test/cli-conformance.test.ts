// `toy eval --json` and greedy `toy infer --json` on every Llama-family fixture agree with the
// references, for --ids and --prompt input, on every available backend, with the F32 KV cache the
// references were made with (the command line defaults to F16).

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import { toyJson } from "./helpers/cli.js";
import { fixtures } from "./helpers/fixtures.js";
import { assertGreedy, loadRef } from "./helpers/refs.js";
import { tolerance } from "./helpers/tolerances.js";

const fx = fixtures();
const MODELS = [
  "stories260K", "llama-tiny", "llama3-tiny", "llama-q-src", "llama-q-F16", "llama-q-BF16", "llama-q-Q8_0",
  "llama-q-Q4_0", "llama-q-Q4_1", "llama-q-Q5_0", "llama-q-Q5_1", "llama-q-Q2_K", "llama-q-Q3_K_M",
  "llama-q-Q4_K_M", "llama-q-Q5_K_M", "llama-q-Q6_K",
  "gpt2-tiny", "qwen2-tiny", "qwen3-tiny", "gemma2-tiny", "olmoe-tiny",
];
const devices: Device[] = ["ts", ...("error" in cpuBackend() ? [] : (["cpu"] as Device[]))];
const PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";

interface EvalJson {
  tokens: number[];
  positions: { next: number | null; logprob: number | null; top: [number, number][] }[];
  nll: number;
  perplexity: number;
}

for (const device of devices) {
  for (const name of MODELS) {
    test(`toy eval and toy infer on ${name} (${device})`, { skip: fx.skip }, () => {
      const tol = tolerance(name, device);
      const ref = loadRef(fx.dir, tol.engine, name)!;
      const model = join(fx.dir, "models", `${name}.gguf`);
      const ev = toyJson<EvalJson>(["eval", model, "--ids", ref.prompt.join(","), "--top-k", "16", "--json", "--cache-type", "f32", "--backend", device]);
      assert.deepEqual(ev.tokens, ref.prompt);
      ev.positions.forEach((p, i) => {
        const r = ref.positions[i];
        assert.equal(p.next, i + 1 < ref.prompt.length ? ref.prompt[i + 1] : null);
        // Our top entries are log-probabilities: compare with the reference logit − logsumexp.
        const ours = new Map(p.top);
        for (const [id, logit] of r.top.slice(0, 4)) {
          const lp = ours.get(id);
          if (lp === undefined) continue; // near-ties at the edge of the top-16 may differ
          assert.ok(Math.abs(lp - (logit - r.logsumexp)) <= 2 * tol.logits, `${name} position ${i} token ${id}: ${lp} vs ${logit - r.logsumexp}`);
        }
        assert.ok(ours.has(r.top[0][0]) || r.top[0][1] - r.top[1][1] < tol.margin, `${name} position ${i}: reference top-1 missing`);
      });
      const inf = toyJson<{ prompt_tokens: number[]; tokens: number[] }>(["infer", model, "--ids", ref.prompt.join(","), "--temperature", "0", "--max-tokens", String(ref.greedy.length), "--json", "--cache-type", "f32", "--backend", device, "--ignore-eos"]);
      assert.deepEqual(inf.prompt_tokens, ref.prompt);
      assertGreedy(ref, inf.tokens, tol.margin, `${name} ${device} infer`);
    });
  }

  for (const name of ["llama-tiny", "gpt2-tiny"]) {
    test(`--prompt gives the reference prompt tokens and continuation: ${name} (${device})`, { skip: fx.skip }, () => {
      const ref = loadRef(fx.dir, tolerance(name, device).engine, name)!;
      const model = join(fx.dir, "models", `${name}.gguf`);
      const inf = toyJson<{ prompt_tokens: number[]; tokens: number[] }>(["infer", model, "--prompt", PROMPT, "--temperature", "0", "--max-tokens", "32", "--json", "--cache-type", "f32", "--backend", device, "--ignore-eos"]);
      assert.deepEqual(inf.prompt_tokens, ref.prompt);
      assertGreedy(ref, inf.tokens, tolerance(name, device).margin, `${name} --prompt`);
      const ev = toyJson<EvalJson>(["eval", model, "--prompt", PROMPT, "--json", "--cache-type", "f32", "--backend", device]);
      assert.deepEqual(ev.tokens, ref.prompt);
    });
  }
}
