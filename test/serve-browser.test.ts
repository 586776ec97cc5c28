// The chat page's in-browser mode: toy serve --serve-weights on a tiny model, the page in headless
// Chromium (Debian's `chromium`, WebGPU on SwiftShader, its software Vulkan) downloads the GGUF
// and generates a greedy reply on the browser's GPU with the bundled webgpu kernels
// (dist/browser/toy-browser.js). The token ids must be those of the same greedy generation on
// the ts backend in this process, up to the first step whose top-2 margin is below the webgpu
// tolerance (test/helpers/tolerances.ts: exact math, so near-ties alone may swap). A sampled
// reply (temperature and seed) must have the ts backend's sampled tokens: the same sampler on
// logits within that tolerance.
// Also, without a browser: the weights route is off unless asked for, and behind the API key.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { loadModel } from "../src/archs/index.js";
import { generate } from "../src/engines/generate.js";
import { DEFAULT_SAMPLING } from "../src/engines/sampling.js";
import { chatTemplateFor } from "../src/io/chat/template.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { createServer } from "../src/serve/server.js";
import { fixtures } from "./helpers/fixtures.js";
import { serve, type Served } from "./helpers/serve.js";
import { tolerance } from "./helpers/tolerances.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const WEBGPU_ARGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
  "--use-webgpu-adapter=swiftshader", "--disable-vulkan-surface", "--no-sandbox", "--headless"];
const MODEL = "qwen2-tiny";
const MAX_TOKENS = 6;
const MESSAGE = "Hello there";

const fx = fixtures();
const modelPath = fx.skip ? "" : join(fx.dir, "models", `${MODEL}.gguf`);
const noModel = fx.skip || (existsSync(modelPath) ? false : `SKIPPED: ${modelPath} not found — the in-browser mode is untested`);
const noBrowser = existsSync(CHROMIUM) ? false : `SKIPPED: ${CHROMIUM} not found (apt-get install chromium) — the in-browser mode is untested`;
for (const why of [noModel, noBrowser]) if (why) console.warn(why);
const skip = noModel || noBrowser;

let served: Served | undefined;
let url = "";
let browser: Browser | undefined;

before(async () => {
  if (skip) return;
  served = await serve(modelPath, ["--backend", "ts", "--serve-weights"]);
  url = served.url;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: WEBGPU_ARGS });
});

after(async () => {
  await browser?.close();
  await served?.stop();
});

/** Greedy on the ts backend, with each step's top-2 margin. */
function greedyOnTs(prompt: number[], stopIds: ReadonlySet<number>) {
  const model = loadModel(modelPath, "ts");
  const cache = model.newCache(prompt.length + MAX_TOKENS);
  let logits = model.forward(Int32Array.from(prompt), cache, "last").data;
  const tokens: number[] = [], margins: number[] = [];
  while (tokens.length < MAX_TOKENS) {
    let best = 0, second = -Infinity;
    for (let i = 1; i < logits.length; i++) {
      if (logits[i] > logits[best]) { second = logits[best]; best = i; } else if (logits[i] > second) second = logits[i];
    }
    margins.push(logits[best] - second);
    if (stopIds.has(best)) break;
    tokens.push(best);
    logits = model.forward(Int32Array.of(best), cache, "last").data;
  }
  return { tokens, margins };
}

test("the chat page runs a greedy reply in the browser on WebGPU, with the ts backend's tokens", { skip, timeout: 240_000 }, async (t) => {
  const page = await browser!.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url + "/");
  const adapter = await page.evaluate(`(async () => {
    const a = navigator.gpu && await navigator.gpu.requestAdapter();
    return a ? a.info.vendor + " " + a.info.architecture : null;
  })()`);
  if (!adapter) {
    console.warn("SKIPPED: this Chromium gives no WebGPU adapter (SwiftShader) — the in-browser mode is untested");
    t.skip("no WebGPU adapter in this Chromium");
    return;
  }
  await page.selectOption("#where", "browser");
  await page.waitForFunction(`/^ready: in this browser/.test(document.getElementById("status").textContent)`, undefined, { timeout: 120_000 });
  await page.fill("#max", String(MAX_TOKENS));
  await page.fill("#temp", "0");
  await page.fill("#input", MESSAGE);
  await page.press("#input", "Enter");
  await page.waitForSelector(".stats[data-done='1']", { timeout: 120_000 });
  const answer = (await page.textContent(".msg.assistant"))!;
  const stats = (await page.textContent(".stats"))!;
  assert.doesNotMatch(answer, /^error:/, answer);
  assert.match(stats, /in this browser/);
  const ours = JSON.parse((await page.getAttribute(".stats", "data-tokens"))!) as number[];

  const file = loadModel(modelPath, "ts").file;
  const tokenizer = tokenizerFromMetadata(file.metadata, modelPath);
  const template = chatTemplateFor(file.metadata, tokenizer);
  const prompt = template.encode([{ role: "user", content: MESSAGE }], true);
  const ref = greedyOnTs(prompt, template.stopIds());
  const tol = tolerance(MODEL, "webgpu");
  let n = 0;
  for (; n < ref.tokens.length && ref.margins[n] >= tol.margin; n++) assert.equal(ours[n], ref.tokens[n], `token ${n} (ts margin ${ref.margins[n]})`);
  if (n === ref.tokens.length) {
    assert.deepEqual(ours, ref.tokens);
    assert.equal(answer, tokenizer.decode(ref.tokens));
  }
  console.log(`# in the browser (${adapter}): ${ours.length} tokens, equal to ts for ${n}/${ref.tokens.length}: ${JSON.stringify(ours)}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a sampled reply in the browser has the ts backend's sampled tokens", { skip, timeout: 240_000 }, async (t) => {
  const page = await browser!.newPage();
  await page.goto(url + "/");
  const sampling = { temperature: 0.9, seed: 1 }; // a seed whose reply is not the greedy one
  const ours = await page.evaluate(`(async () => {
    if (!navigator.gpu || !(await navigator.gpu.requestAdapter())) return null;
    const toy = await import("/toy-browser.js");
    const m = await toy.loadInBrowser("/v1/models/${MODEL}/gguf");
    const r = await m.chat([{ role: "user", content: ${JSON.stringify(MESSAGE)} }], { maxTokens: ${MAX_TOKENS}, ...${JSON.stringify(sampling)} });
    return r.tokens;
  })()`) as number[] | null;
  await page.close();
  if (!ours) {
    t.skip("no WebGPU adapter in this Chromium");
    return;
  }
  const model = loadModel(modelPath, "ts");
  const tokenizer = tokenizerFromMetadata(model.file.metadata, modelPath);
  const template = chatTemplateFor(model.file.metadata, tokenizer);
  const prompt = template.encode([{ role: "user", content: MESSAGE }], true);
  const ref = generate(model, prompt, { maxTokens: MAX_TOKENS, stopIds: template.stopIds(), sampling: { ...DEFAULT_SAMPLING, ...sampling } });
  const greedy = generate(model, prompt, { maxTokens: MAX_TOKENS, stopIds: template.stopIds(), sampling: { ...DEFAULT_SAMPLING, temperature: 0 } });
  console.log(`# sampled in the browser: ${JSON.stringify(ours)}, on ts: ${JSON.stringify(ref.tokens)} (greedy: ${JSON.stringify(greedy.tokens)})`);
  assert.notDeepEqual(ref.tokens, greedy.tokens, "the seed should give a reply other than the greedy one");
  assert.deepEqual(ours, ref.tokens);
});

test("a second turn in the browser reads only the new messages, and answers as ts does on the whole conversation", { skip, timeout: 240_000 }, async (t) => {
  const page = await browser!.newPage();
  await page.goto(url + "/");
  const got = await page.evaluate(`(async () => {
    if (!navigator.gpu || !(await navigator.gpu.requestAdapter())) return null;
    const toy = await import("/toy-browser.js");
    const m = await toy.loadInBrowser("/v1/models/${MODEL}/gguf");
    const first = await m.chat([{ role: "user", content: ${JSON.stringify(MESSAGE)} }], { maxTokens: ${MAX_TOKENS} });
    const conversation = [{ role: "user", content: ${JSON.stringify(MESSAGE)} }, { role: "assistant", content: first.text }, { role: "user", content: "And then?" }];
    const second = await m.chat(conversation, { maxTokens: ${MAX_TOKENS} });
    return { conversation, first: first.cachedTokens, second: second.cachedTokens, tokens: second.tokens };
  })()`) as { conversation: { role: string; content: string }[]; first: number; second: number; tokens: number[] } | null;
  await page.close();
  if (!got) {
    t.skip("no WebGPU adapter in this Chromium");
    return;
  }
  const file = loadModel(modelPath, "ts").file;
  const tokenizer = tokenizerFromMetadata(file.metadata, modelPath);
  const template = chatTemplateFor(file.metadata, tokenizer);
  const firstPrompt = template.encode([got.conversation[0]], true);
  const prompt = template.encode(got.conversation, true);
  let shared = 0;
  while (shared < firstPrompt.length && firstPrompt[shared] === prompt[shared]) shared++;
  console.log(`# second turn: ${got.second} of ${prompt.length} prompt tokens kept in the cache (first turn ${got.first})`);
  assert.equal(got.first, 0);
  assert.ok(got.second >= shared, `the second turn should keep at least the first prompt's shared start (${shared}), kept ${got.second}`);
  const ref = greedyOnTs(prompt, template.stopIds());
  const tol = tolerance(MODEL, "webgpu");
  for (let n = 0; n < ref.tokens.length && ref.margins[n] >= tol.margin; n++) assert.equal(got.tokens[n], ref.tokens[n], `token ${n}`);
});

test("without WebGPU the page says so, and the server mode still answers", { skip, timeout: 120_000 }, async () => {
  // Chromium as test/serve-page.test.ts runs it (no GPU, WebGPU not enabled).
  const plain = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--headless", "--no-sandbox", "--disable-gpu"] });
  try {
    const page = await plain.newPage();
    await page.goto(url + "/");
    await page.selectOption("#where", "browser");
    await page.waitForFunction(`/^error: /.test(document.getElementById("status").textContent)`, undefined, { timeout: 60_000 });
    const said = (await page.textContent("#status"))!;
    console.log(`# without WebGPU the page says: ${said}`);
    assert.match(said, /no WebGPU|no WebGPU adapter|refused/);
    await page.fill("#max", "3");
    await page.fill("#input", MESSAGE);
    await page.press("#input", "Enter");
    await page.waitForSelector(".stats[data-done='1']", { state: "attached", timeout: 60_000 });
    assert.match((await page.textContent(".msg.error"))!, /^error: .*WebGPU/);
    await page.selectOption("#where", "server");
    await page.fill("#input", MESSAGE);
    await page.press("#input", "Enter");
    await page.waitForSelector(".msg.assistant", { timeout: 60_000 });
    await page.waitForFunction(`document.querySelectorAll(".stats[data-done='1']").length === 2`, undefined, { timeout: 60_000 });
    assert.doesNotMatch((await page.textContent(".msg.assistant"))!, /^error:/);
  } finally {
    await plain.close();
  }
});

test("the model file is sent only with --serve-weights, whole, and behind the API key", { skip: noModel }, async () => {
  const model = loadModel(modelPath, "ts");
  const tokenizer = tokenizerFromMetadata(model.file.metadata, modelPath);
  const base = { name: MODEL, parallel: 1, queueSize: 4, contextSize: 64, bodyLimit: 1 << 20, fingerprint: "test" };
  const closed = createServer(model, tokenizer, base);
  const refused = await closed.app.inject({ method: "GET", url: `/v1/models/${MODEL}/gguf` });
  assert.equal(refused.statusCode, 404);
  assert.match(refused.json().error.message, /--serve-weights/);
  assert.doesNotMatch((await closed.app.inject({ method: "GET", url: "/" })).body, /id="where"/);
  await closed.close();

  const open = createServer(model, tokenizer, { ...base, apiKey: "sesame", weightsPath: modelPath });
  assert.match((await open.app.inject({ method: "GET", url: "/" })).body, /in this browser \(WebGPU\)/);
  assert.equal((await open.app.inject({ method: "GET", url: `/v1/models/${MODEL}/gguf` })).statusCode, 401);
  assert.equal((await open.app.inject({ method: "GET", url: `/v1/models/other/gguf`, headers: { authorization: "Bearer sesame" } })).statusCode, 404);
  const sent = await open.app.inject({ method: "GET", url: `/v1/models/${MODEL}/gguf`, headers: { authorization: "Bearer sesame" } });
  assert.equal(sent.statusCode, 200);
  assert.equal(Number(sent.headers["content-length"]), statSync(modelPath).size);
  assert.equal(sent.rawPayload.byteLength, statSync(modelPath).size);
  const bundle = await open.app.inject({ method: "GET", url: "/toy-browser.js" }); // no key needed
  assert.equal(bundle.statusCode, 200);
  assert.match(bundle.headers["content-type"] as string, /javascript/);
  assert.doesNotMatch(bundle.body, /from\s*["']node:/, "no node: import in the browser bundle");
  await open.close();
});
