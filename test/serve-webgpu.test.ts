// toy serve --backend webgpu: the scheduler's ticks await the GPU's batched forward
// (forwardBatchAsync) while the event loop serves sockets. Through the official openai client,
// on a tiny fixture (llvmpipe in CI is slow): completions and chat, streaming, a grammar that
// constrains the sampler, and the same answer twice. Batch invariance on webgpu is in
// serve-invariance.test.ts. Skips visibly without an adapter or the fixtures.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type OpenAI from "openai";
import { fixtures } from "./helpers/fixtures.js";
import { serve, type Served } from "./helpers/serve.js";
import { webgpu } from "./helpers/webgpu.js";

const fx = fixtures();
const gpu = await webgpu();
const MODEL = "stories260K";

describe("toy serve --backend webgpu (stories260K, openai client)", { skip: fx.skip || gpu.skip }, () => {
  let s: Served;
  before(async () => {
    s = await serve(join(fx.dir, "models", `${MODEL}.gguf`), ["--backend", "webgpu", "--parallel", "2"]);
  });
  after(async () => { await s?.stop(); });

  test("ready after the warm-up, and the banner names the backend", async () => {
    assert.equal((await fetch(`${s.url}/ready`)).status, 200);
    assert.match(s.stderr(), /webgpu backend/);
  });

  test("a greedy completion is the same twice; streamed, the same text", async () => {
    const body = { model: MODEL, prompt: "Once upon a time", max_tokens: 12, temperature: 0 };
    const a = await s.client.completions.create(body);
    const b = await s.client.completions.create(body);
    assert.equal(a.choices[0].finish_reason, "length");
    assert.equal(a.usage?.completion_tokens, 12);
    assert.equal(b.choices[0].text, a.choices[0].text);
    let text = "";
    for await (const c of await s.client.completions.create({ ...body, stream: true })) text += c.choices[0]?.text ?? "";
    assert.equal(text, a.choices[0].text);
  });

  test("a grammar constrains the sampler on webgpu too", async () => {
    const p = await s.client.completions.create({ model: MODEL, prompt: "The answer is", grammar: 'root ::= " " [0-9]{2}', max_tokens: 10, temperature: 0.8, seed: 4 } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.match(p.choices[0].text, /^ [0-9]{2}$/);
    assert.equal(p.choices[0].finish_reason, "stop");
  });

  test("chat, streamed: text and a finish reason", async () => {
    let text = "", finish: string | null = null;
    for await (const c of await s.client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Hi" }], max_tokens: 8, stream: true, seed: 1 })) {
      text += c.choices[0]?.delta.content ?? "";
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.ok(finish === "length" || finish === "stop", String(finish));
    assert.ok(text.length > 0);
  });
});
