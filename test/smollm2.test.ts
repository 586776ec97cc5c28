// The real checkpoint: SmolLM2-135M-Instruct (Q4_1 weights, Q8_0 tied embedding/output).
// Prompt tokens, prompt logits, greedy continuation, both chat conversations and the
// perplexity of tinyshakespeare against refs/exact (ts) and refs/llamacpp (cpu).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadModelFromFile } from "../src/archs/index.js";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import { generate } from "../src/engines/generate.js";
import { DEFAULT_SAMPLING } from "../src/engines/sampling.js";
import { chatTemplateFor, type ChatMessage } from "../src/io/chat/template.js";
import { readGGUF } from "../src/io/gguf/reader.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { logSumExp } from "../src/primitives/index.js";
import { toyJson } from "./helpers/cli.js";
import { fixtures, sharedDataDir } from "./helpers/fixtures.js";
import { assertGreedy, assertTop1, loadRef, maxLogitError } from "./helpers/refs.js";
import { tolerance } from "./helpers/tolerances.js";

const fx = fixtures();
const NAME = "SmolLM2-135M-Instruct.Q4_1";
const PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
const devices: Device[] = ["ts", ...("error" in cpuBackend() ? [] : (["cpu"] as Device[]))];
const greedy = { ...DEFAULT_SAMPLING, temperature: 0 };
const modelPath = () => join(fx.dir, "models", `${NAME}.gguf`);

// ts follows refs/exact (float32 math on the dequantized weights; rounding-level differences);
// cpu follows refs/llamacpp (8-bit activations). Tolerances and reasons: test/helpers/tolerances.ts.
const TOL = (device: Device) => {
  const t = tolerance(NAME, device);
  return device === "ts" ? { ...t, logits: 5e-3, margin: 2e-2 } : t;
};

interface ChatRef {
  messages: ChatMessage[];
  rendered: string;
  prompt_ids: number[];
  greedy: number[];
  greedy_margins: number[];
  greedy_text: string;
  exact_greedy: number[];
  exact_greedy_margins: number[];
}

test("SmolLM2: --prompt tokenizes to the reference prompt (no BOS)", { skip: fx.skip }, () => {
  const ref = loadRef(fx.dir, "llamacpp", NAME)!;
  const tok = tokenizerFromMetadata(readGGUF(modelPath()).metadata, modelPath());
  assert.equal(tok.addBos, false);
  assert.deepEqual(tok.encode(PROMPT), ref.prompt);
});

test("SmolLM2: chat template renders both reference conversations to the reference ids", { skip: fx.skip }, () => {
  const file = readGGUF(modelPath());
  const tok = tokenizerFromMetadata(file.metadata, modelPath());
  const template = chatTemplateFor(file.metadata, tok);
  const chats = JSON.parse(readFileSync(join(fx.dir, "refs", "chat", `${NAME}.json`), "utf8")) as ChatRef[];
  for (const c of chats) {
    assert.equal(template.render(c.messages), c.rendered);
    assert.deepEqual(template.encode(c.messages), c.prompt_ids);
  }
  assert.ok(template.stopIds().has(2), "<|im_end|> (id 2) ends a turn");
});

for (const device of devices) {
  test(`SmolLM2 on ${device}: prompt logits and greedy continuation match the reference`, { skip: fx.skip }, () => {
    const engine = TOL(device).engine;
    const ref = loadRef(fx.dir, engine, NAME)!;
    const model = loadModelFromFile(readGGUF(modelPath()), device);
    const logits = model.forward(Int32Array.from(ref.prompt), model.newCache(), "all");
    const row = (i: number) => logits.data.subarray(i * model.nVocab, (i + 1) * model.nVocab);
    const err = maxLogitError(ref, row, (i) => logSumExp(row(i)));
    console.log(`# SmolLM2 ${device} vs ${engine}: max |Δlogit| ${err.toExponential(2)}`);
    assert.ok(err <= TOL(device).logits, `max |Δlogit| ${err}`);
    assertTop1(ref, row, TOL(device).margin, `SmolLM2 ${device}`);
    const steps = device === "ts" ? 12 : ref.greedy.length; // ts is the slow reference: a shorter run
    const out = generate(model, ref.prompt, { maxTokens: steps, sampling: greedy });
    const n = assertGreedy({ ...ref, greedy: ref.greedy.slice(0, steps) }, out.tokens, TOL(device).margin, `SmolLM2 ${device}`);
    console.log(`# SmolLM2 ${device}: greedy equal for ${n}/${steps} steps`);
  });

  test(`SmolLM2 on ${device}: greedy chat answers follow the reference`, { skip: fx.skip }, () => {
    const file = readGGUF(modelPath());
    const model = loadModelFromFile(file, device);
    const tok = tokenizerFromMetadata(file.metadata, modelPath());
    const template = chatTemplateFor(file.metadata, tok);
    const chats = JSON.parse(readFileSync(join(fx.dir, "refs", "chat", `${NAME}.json`), "utf8")) as ChatRef[];
    for (const c of chats) {
      const ids = device === "ts" ? c.exact_greedy : c.greedy;
      const margins = device === "ts" ? c.exact_greedy_margins : c.greedy_margins;
      const out = generate(model, c.prompt_ids, { maxTokens: Math.min(ids.length, device === "ts" ? 10 : 40), sampling: greedy, stopIds: template.stopIds() });
      const emitted = out.finishReason === "stop" ? [...out.tokens, 2] : out.tokens; // the turn ends with <|im_end|>
      const n = assertGreedy({ greedy: ids.slice(0, emitted.length), greedy_margins: margins } as never, emitted, TOL(device).margin, `chat ${device}`);
      console.log(`# chat "${c.messages.at(-1)!.content}" on ${device}: ${JSON.stringify(tok.decode(out.tokens))} (equal for ${n} steps)`);
    }
  });
}

test("SmolLM2: toy infer --chat --json prints the rendered prompt ids and the exact-math answer (ts)", { skip: fx.skip }, () => {
  const chats = JSON.parse(readFileSync(join(fx.dir, "refs", "chat", `${NAME}.json`), "utf8")) as ChatRef[];
  const c = chats[0];
  const out = toyJson<{ prompt_tokens: number[]; tokens: number[]; text: string }>(
    ["infer", modelPath(), "--chat", c.messages[0].content!, "--temperature", "0", "--max-tokens", "3", "--json", "--cache-type", "f32", "--backend", "ts"]);
  assert.deepEqual(out.prompt_tokens, c.prompt_ids);
  assert.deepEqual(out.tokens, c.exact_greedy.slice(0, 3));
});

const cpuSkip = fx.skip || ("error" in cpuBackend() ? "SKIPPED: needs the native cpu backend (the ts backend would take too long)" : false);
test("SmolLM2: perplexity of tinyshakespeare (4096 tokens, windows of 512) is within 0.2% of 46.583", { skip: cpuSkip }, () => {
  const data = sharedDataDir()!;
  const out = toyJson<{ perplexity: number; tokens_scored: number }>(
    ["eval", modelPath(), "--file", join(data, "tinyshakespeare.txt"), "--max-tokens", "4096", "--window", "512", "--top-k", "0", "--json", "--cache-type", "f32", "--backend", "cpu"],
    { timeout: 600_000 });
  console.log(`# SmolLM2 perplexity (cpu): ${out.perplexity.toFixed(4)} over ${out.tokens_scored} tokens`);
  assert.equal(out.tokens_scored, 4088);
  assert.ok(Math.abs(out.perplexity / 46.583 - 1) < 0.002, `perplexity ${out.perplexity}`);
});
