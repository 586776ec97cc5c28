// Generate text with a GGUF model: greedy, sampled with seeds, a chat turn, and the loop by hand.
//
// Run it with `npm run example -- generate` (add `--quick` for shorter outputs). The model is
// $TOY_MODEL, else SmolLM2-135M-Instruct from the shared fixtures, else the model the
// from-scratch example saved.
//
// What happens, in order:
//   1. the model file is opened, its tokenizer built from the file's own metadata;
//   2. a greedy continuation is streamed to the terminal token by token;
//   3. the same prompt is sampled with three seeds: a seed always gives the same text;
//   4. a chat message is answered through the model's own chat template;
//   5. the loop inside `generate` is written out by hand: forward, pick, append, repeat.

import {
  argmax, chatTemplateFor, DEFAULT_SAMPLING, generate, loadModelFromFile, logSumExp, readGGUF, selectBackend,
  tokenizerFromMetadata, topIds, type LanguageModel,
} from "toy";
import { exampleModel, pick } from "./lib/setup.js";

// --- 1. The model ---------------------------------------------------------------------------------
// `selectBackend()` is "cpu" (the native kernels) when they built, else "ts" (plain TypeScript).
// On cpu the file is memory-mapped: quantized weights stay as they are in the file and are
// multiplied in their storage type, the way llama.cpp does it.
const path = exampleModel();
const device = selectBackend(undefined, { quiet: true });
const file = readGGUF(path);
const model: LanguageModel = loadModelFromFile(file, device);
const tokenizer = tokenizerFromMetadata(file.metadata, path);
const c = model.config;
console.log(`model: ${path}\n  ${c.arch}, ${c.nLayer} layers, width ${c.nEmbd}, ${c.nHead} heads (${c.nKVHead} for keys and values), ` +
  `vocabulary ${c.nVocab}, context ${c.contextLength}; backend ${device}`);

// --- 2. Greedy, streamed --------------------------------------------------------------------------
// Greedy decoding (temperature 0) takes the most likely token every time. `onToken` is called
// with each new token as it comes; a stream decoder turns ids into text only once a UTF-8
// character is complete (a token can end in the middle of one).
const prompt = "Once upon a time, there was a little robot who";
const promptIds = tokenizer.encode(prompt);
console.log(`\n[greedy] prompt: "${prompt}" (${promptIds.length} tokens)`);
const stream = tokenizer.streamDecoder();
process.stdout.write(prompt);
const greedy = generate(model, promptIds, {
  maxTokens: pick(48, 16),
  sampling: { ...DEFAULT_SAMPLING, temperature: 0 },
  stopIds: tokenizer.stopIds,
  onToken: (id) => { process.stdout.write(stream.push(id)); },
});
process.stdout.write(stream.flush() + "\n");
console.log(`(${greedy.tokens.length} tokens, finish: ${greedy.finishReason}; ` +
  `prompt ${greedy.promptTokensPerS.toFixed(0)} tokens/s, generation ${greedy.tokensPerS.toFixed(1)} tokens/s)`);

// --- 3. Sampling with seeds -----------------------------------------------------------------------
// Sampling draws the next token at random from the model's distribution, after llama.cpp's
// filters (top-k 40, top-p 0.95, min-p 0.05) and a temperature of 0.8. The randomness is a
// seeded generator: seed 1 twice gives the same text, bit for bit; seed 2 another one.
console.log("\n[sampled, temperature 0.8]");
for (const seed of [1, 2, 1]) {
  const r = generate(model, promptIds, { maxTokens: pick(32, 12), sampling: { ...DEFAULT_SAMPLING, seed }, stopIds: tokenizer.stopIds });
  console.log(`  seed ${seed}: ${JSON.stringify(tokenizer.decode([...promptIds, ...r.tokens]))}`);
}

// --- 4. A chat turn -------------------------------------------------------------------------------
// An instruction-tuned model expects its conversation format. The GGUF carries it as a Jinja
// template (tokenizer.chat_template), rendered here exactly as the model's authors wrote it;
// the answer ends at the template's end-of-turn token. A model without one (like the
// from-scratch model) was never taught to chat, and there is nothing to show.
if (file.metadata.has("tokenizer.chat_template")) {
  const template = chatTemplateFor(file.metadata, tokenizer);
  const question = "What is the capital of France? Answer in one sentence.";
  const turn = template.encode([{ role: "user", content: question }]);
  const answer = generate(model, turn, { maxTokens: pick(48, 16), sampling: { ...DEFAULT_SAMPLING, temperature: 0 }, stopIds: template.stopIds() });
  console.log(`\n[chat] user: ${question}`);
  console.log(`  assistant: ${tokenizer.decode(answer.tokens).trim()}`);
} else {
  console.log("\n[chat] skipped: this model has no chat template (tokenizer.chat_template), so it was not trained to chat");
}

// --- 5. The loop by hand --------------------------------------------------------------------------
// What `generate` does, spelled out: read the prompt into a KV cache (one batched forward),
// then feed back one token at a time. Each forward returns logits; softmax turns them into
// probabilities, p(token) = exp(logit − logsumexp(logits)). Here: the three most likely
// candidates at each step, and greedy's choice.
console.log("\n[by hand: the three most likely next tokens at each step]");
// A token's text on its own, as a stream decoder gives it (decode() would drop the space a
// SentencePiece text starts with).
const piece = (id: number) => { const d = tokenizer.streamDecoder(); return JSON.stringify(d.push(id) + d.flush()); };
const cache = model.newCache(promptIds.length + 8);
let logits = model.forward(Int32Array.from(promptIds), cache, "last").data;   // [vocab]: after the whole prompt
const chosen: number[] = [];
for (let i = 0; i < pick(6, 3); i++) {
  const lse = logSumExp(logits);
  const candidates = topIds(logits, 3).map((id) => `${piece(id)} ${(100 * Math.exp(logits[id] - lse)).toFixed(1)}%`);
  const next = argmax(logits);
  chosen.push(next);
  console.log(`  step ${i + 1}: ${candidates.join("   ")}`);
  logits = model.forward(Int32Array.of(next), cache, "last").data;               // one new row; the rest is cached
}
const same = chosen.every((id, i) => id === greedy.tokens[i]);
console.log(`greedy by hand: ${JSON.stringify(tokenizer.decode(chosen))} — ${same ? "the same tokens as generate() chose" : "NOT what generate() chose"}`);
