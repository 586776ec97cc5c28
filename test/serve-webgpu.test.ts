// `toy serve --backend webgpu` through the official `openai` client on a tiny fixture (llvmpipe
// here): completions and chat, streaming and not, equal to `toy infer --backend webgpu`; clients
// at once get their solo answers bit for bit (log-probabilities included, n, json_object);
// a client leaving mid-stream; /metrics; SIGTERM drains and exits 0. Skips, visibly, without
// fixtures or a WebGPU adapter.
// (Answers independent of load at 16 clients: test/serve-invariance.test.ts, webgpu included.)

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type OpenAI from "openai";
import { toyJson } from "./helpers/cli.js";
import { fixtures } from "./helpers/fixtures.js";
import { metricValue, serve, until, type Served } from "./helpers/serve.js";
import { webgpu } from "./helpers/webgpu.js";

const fx = fixtures();
const gpu = await webgpu();
const skip = fx.skip || gpu.skip;
const MODEL = "stories260K";
const PROMPT = "Once upon a time";
const path = join(fx.dir, "models", `${MODEL}.gguf`);

/** A completion request's text and every token's log-probabilities, streamed or not. */
async function complete(client: OpenAI, body: OpenAI.CompletionCreateParamsNonStreaming, stream: boolean) {
  if (!stream) {
    const r = await client.completions.create(body);
    return r.choices.map((c) => ({ text: c.text, finish: c.finish_reason, logprobs: c.logprobs?.token_logprobs ?? [] }));
  }
  const out: { text: string; finish: string | null; logprobs: number[] }[] = [];
  for await (const c of await client.completions.create({ ...body, stream: true })) {
    for (const ch of c.choices) {
      const o = (out[ch.index] ??= { text: "", finish: null, logprobs: [] });
      o.text += ch.text;
      o.finish = ch.finish_reason ?? o.finish;
      o.logprobs.push(...(ch.logprobs?.token_logprobs ?? []));
    }
  }
  return out;
}

describe(`toy serve --backend webgpu (${MODEL})`, { skip }, () => {
  let s: Served;
  before(async () => {
    s = await serve(path, ["--backend", "webgpu", "--parallel", "4", "--batch-tokens", "16"]);
  });
  after(async () => { await s?.stop("SIGKILL"); });

  test("the server says it runs on webgpu", () => {
    assert.match(s.stderr(), /webgpu backend/);
  });

  test("completions: greedy output equals toy infer --backend webgpu, streaming and not", async () => {
    const inf = toyJson<{ prompt_tokens: number[]; text: string }>(["infer", path, "--prompt", PROMPT, "--temperature", "0", "--max-tokens", "16", "--ignore-eos", "--json", "--backend", "webgpu"]);
    const body = { model: MODEL, prompt: PROMPT, max_tokens: 16, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming;
    const [plain] = await complete(s.client, body, false);
    assert.equal(plain.text, inf.text);
    assert.equal(plain.finish, "length");
    const [streamed] = await complete(s.client, body, true);
    assert.equal(streamed.text, inf.text);
  });

  test("chat: greedy output equals toy infer --messages --backend webgpu, streaming and not", async () => {
    const messages = [{ role: "user" as const, content: "Tell me a story." }];
    const dir = mkdtempSync(join(tmpdir(), "toy-serve-webgpu-"));
    writeFileSync(join(dir, "m.json"), JSON.stringify(messages));
    const inf = toyJson<{ text: string; finish_reason: string }>(["infer", path, "--messages", join(dir, "m.json"), "--temperature", "0", "--max-tokens", "12", "--json", "--backend", "webgpu"]);
    const r = await s.client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0 });
    assert.equal(r.choices[0].message.content, inf.text);
    assert.equal(r.choices[0].finish_reason, inf.finish_reason);
    let text = "";
    for await (const c of await s.client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0, stream: true })) {
      text += c.choices[0]?.delta.content ?? "";
    }
    assert.equal(text, inf.text);
  });

  test("clients at once get their solo answers bit for bit (sampled, logprobs, n, streaming)", async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => ({
      model: MODEL, prompt: `${PROMPT} ${"there was ".repeat(i)}`, max_tokens: 10, ignore_eos: true,
      temperature: [0, 0.8, 1.2][i % 3], seed: 40 + i, logprobs: 2, ...(i === 4 ? { n: 2 } : {}),
    }) as OpenAI.CompletionCreateParamsNonStreaming);
    const solo = [];
    for (const [i, b] of bodies.entries()) solo.push(await complete(s.client, b, i % 2 === 1));
    // Two first (the case), then all six (more requests than slots: some wait).
    const two = await Promise.all(bodies.slice(0, 2).map((b, i) => complete(s.client, b, i % 2 === 1)));
    assert.deepEqual(two, solo.slice(0, 2));
    const all = await Promise.all(bodies.map((b, i) => complete(s.client, b, i % 2 === 1)));
    for (let i = 0; i < bodies.length; i++) assert.deepEqual(all[i], solo[i], `client ${i} differs from its solo answer`);
    assert.equal(solo[4].length, 2);
    assert.equal(solo[0][0].logprobs.length, 10);
  });

  test("response_format json_object: the answer parses, at any temperature", async () => {
    for (const temperature of [0, 1.5]) {
      const r = await s.client.chat.completions.create({
        model: MODEL, messages: [{ role: "user", content: "Give me JSON." }], max_tokens: 40, temperature, seed: 9,
        response_format: { type: "json_object" },
      });
      if (r.choices[0].finish_reason === "stop") assert.equal(typeof JSON.parse(r.choices[0].message.content!), "object");
      else assert.equal(r.choices[0].finish_reason, "length");
    }
  });

  test("a client that leaves mid-stream (its rows possibly in flight) frees its slot; the slot's cache stays right", async () => {
    const health = async () => (await (await fetch(`${s.url}/health`)).json()) as { slots_busy: number; aborted: number };
    const body = { model: MODEL, prompt: PROMPT, max_tokens: 12, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming;
    const other = { ...body, prompt: `${PROMPT} in a forest`, temperature: 0.9, seed: 5 };
    const [soloOther] = await complete(s.client, other, true);
    const before = await health();
    const ac = new AbortController();
    const leaving = (async () => {
      let got = 0;
      try {
        for await (const c of await s.client.completions.create({ ...body, max_tokens: 200, stream: true }, { signal: ac.signal })) {
          if (c.choices[0].text && ++got === 3) ac.abort();
        }
      } catch {
        // the client's own abort
      }
    })();
    const [[staying]] = await Promise.all([complete(s.client, other, true), leaving]);
    assert.deepEqual(staying, soloOther);
    await until("the slot to be free", async () => (await health()).slots_busy === 0);
    assert.equal((await health()).aborted, before.aborted + 1);
    // The same prompt again finds its start in that slot's cache: the answer is still the solo one.
    const inf = toyJson<{ text: string }>(["infer", path, "--prompt", PROMPT, "--temperature", "0", "--max-tokens", "12", "--ignore-eos", "--json", "--backend", "webgpu"]);
    const [again] = await complete(s.client, body, false);
    assert.equal(again.text, inf.text);
  });

  test("/metrics counts the requests; SIGTERM drains and exits 0", async () => {
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    assert.ok(metricValue(metrics, "toy_generations_total", { finish_reason: "length" }) >= 20, metrics.slice(0, 600));
    const pending = s.client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    await new Promise((r) => setTimeout(r, 50));
    const code = await s.stop("SIGTERM");
    assert.equal(code, 0, s.stderr());
    const r = await pending;
    assert.equal(r.choices[0].finish_reason, "length");
  });
});
