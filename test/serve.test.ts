// `toy serve` through the official `openai` client, against fixture models: models, chat and
// completions (streaming and not), stop sequences, max_tokens, seeded sampling, logprobs, greedy
// output equal to `toy infer`, 16 concurrent streams, disconnects, and every error status.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { cpuBackend } from "../src/backends/index.js";
import { toyBin } from "./helpers/cli.js";
import { toyJson } from "./helpers/cli.js";
import { fixtures } from "./helpers/fixtures.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parseGbnf } from "../src/engines/grammar/gbnf.js";
import { DEAD, feed, Program, Recognizer } from "../src/engines/grammar/recognizer.js";
import { jsonObjectGbnf, schemaToGbnf } from "../src/engines/grammar/schema.js";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

const fx = fixtures();
const backend = "error" in cpuBackend() ? "ts" : "cpu";
const model = (name: string) => join(fx.dir, "models", `${name}.gguf`);

interface Served {
  url: string;
  proc: ChildProcess;
  client: OpenAI;
  stop(): Promise<void>;
}

/** Start `toy serve MODEL --port 0 ...` and wait for the address it prints. */
async function serve(name: string, args: string[], apiKey = "unused"): Promise<Served> {
  const proc = spawn(process.execPath, [toyBin, "serve", model(name), "--port", "0", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`toy serve did not start: ${stderr}`)), 60_000);
    proc.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
      const m = /serving \S+ on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`toy serve exited ${code}: ${stderr}`)); });
  });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 120_000 });
  return {
    url, proc, client,
    stop: () => new Promise<void>((resolve) => {
      if (proc.exitCode !== null) return resolve();
      proc.once("exit", () => resolve());
      proc.kill("SIGTERM");
    }),
  };
}

async function health(url: string) {
  return (await (await fetch(`${url}/health`)).json()) as { slots_busy: number; queued: number; completed: number; aborted: number };
}

async function until(what: string, cond: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function postJson(url: string, path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  return { status: res.status, body: (await res.json()) as { error: { message: string; type: string; param: string | null; code: string | null } } };
}

function assertErrorShape(body: unknown, status: number): void {
  const e = (body as { error?: Record<string, unknown> }).error;
  assert.ok(e, `status ${status}: body has an "error" object: ${JSON.stringify(body)}`);
  assert.equal(typeof e.message, "string");
  assert.equal(typeof e.type, "string");
  assert.ok("param" in e && "code" in e, "error has param and code");
}

const STORIES = "stories260K";
const PROMPT = "Once upon a time";

describe("toy serve", { skip: fx.skip }, () => {
  let a: Served; // stories260K: most tests
  let b: Served; // llama-tiny on ts (slow enough to hold a slot): one slot, a queue of one, an API key
  let greedyText = "";

  before(async () => {
    [a, b] = await Promise.all([
      serve(STORIES, ["--backend", backend, "--parallel", "8", "--queue", "16", "--body-limit", "65536"]),
      serve("llama-tiny", ["--backend", "ts", "--parallel", "1", "--queue", "1", "--api-key", "sesame", "--name", "tiny"], "sesame"),
    ]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  test("GET /v1/models lists the model; /v1/models/ID retrieves it", async () => {
    const list = await a.client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), [STORIES]);
    assert.equal(list.data[0].object, "model");
    assert.equal((await a.client.models.retrieve(STORIES)).id, STORIES);
    const h = (await (await fetch(`${a.url}/health`)).json()) as { status: string };
    assert.equal(h.status, "ok");
  });

  test("completions: greedy output equals toy infer, with usage and finish_reason", async () => {
    const inf = toyJson<{ prompt_tokens: number[]; tokens: number[]; text: string }>(["infer", model(STORIES), "--prompt", PROMPT, "--temperature", "0", "--max-tokens", "16", "--ignore-eos", "--json", "--backend", backend]);
    const r = await a.client.completions.create({ model: STORIES, prompt: PROMPT, max_tokens: 16, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(r.object, "text_completion");
    assert.equal(r.choices[0].text, inf.text);
    assert.equal(r.choices[0].finish_reason, "length");
    assert.deepEqual(r.usage && { p: r.usage.prompt_tokens, c: r.usage.completion_tokens, t: r.usage.total_tokens }, { p: inf.prompt_tokens.length, c: 16, t: inf.prompt_tokens.length + 16 });
    greedyText = r.choices[0].text;
    // Token ids as the prompt give the same answer.
    const ids = await a.client.completions.create({ model: STORIES, prompt: inf.prompt_tokens, max_tokens: 16, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(ids.choices[0].text, inf.text);
  });

  test("completions: streaming gives the same text and ends with data: [DONE]", async () => {
    const stream = await a.client.completions.create({ model: STORIES, prompt: PROMPT, max_tokens: 16, temperature: 0, ignore_eos: true, stream: true } as OpenAI.CompletionCreateParamsStreaming);
    let text = "", finish: string | null = null, chunks = 0;
    for await (const c of stream) {
      text += c.choices[0].text;
      finish = c.choices[0].finish_reason ?? finish;
      chunks++;
    }
    assert.equal(text, greedyText);
    assert.equal(finish, "length");
    assert.ok(chunks >= 16, `one event per token (${chunks})`);
    const raw = await fetch(`${a.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: STORIES, prompt: PROMPT, max_tokens: 3, stream: true }) });
    assert.match(raw.headers.get("content-type") ?? "", /text\/event-stream/);
    const body = await raw.text();
    assert.ok(body.endsWith("data: [DONE]\n\n"), body.slice(-100));
  });

  test("chat: greedy output equals toy infer --messages on the same rendered prompt (fallback template), streaming and not", async () => {
    const messages = [{ role: "system" as const, content: "You tell stories." }, { role: "user" as const, content: "Tell me one." }];
    const dir = mkdtempSync(join(tmpdir(), "toy-serve-"));
    writeFileSync(join(dir, "m.json"), JSON.stringify(messages));
    const inf = toyJson<{ prompt_tokens: number[]; text: string; finish_reason: string }>(["infer", model(STORIES), "--messages", join(dir, "m.json"), "--temperature", "0", "--max-tokens", "20", "--json", "--backend", backend]);
    const r = await a.client.chat.completions.create({ model: STORIES, messages, max_tokens: 20, temperature: 0 });
    assert.equal(r.object, "chat.completion");
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(r.choices[0].message.content, inf.text);
    assert.equal(r.choices[0].finish_reason, inf.finish_reason);
    assert.equal(r.usage?.prompt_tokens, inf.prompt_tokens.length);
    const stream = await a.client.chat.completions.create({ model: STORIES, messages, max_tokens: 20, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let text = "", role = "", finish: string | null = null, usage: OpenAI.CompletionUsage | undefined;
    for await (const c of stream) {
      if (c.usage) usage = c.usage;
      const ch = c.choices[0];
      if (!ch) continue;
      role ||= ch.delta.role ?? "";
      text += ch.delta.content ?? "";
      finish = ch.finish_reason ?? finish;
    }
    assert.equal(role, "assistant");
    assert.equal(text, inf.text);
    assert.equal(finish, inf.finish_reason);
    assert.equal(usage?.completion_tokens, r.usage?.completion_tokens);
  });

  test("stop sequences: a string, a list, and one that spans two tokens; streaming and not", async () => {
    const pieces = greedyText.match(/<t\d+>/g)!; // stories260K's placeholder pieces
    assert.ok(pieces.length >= 8, greedyText);
    const cases: { stop: string | string[]; at: string }[] = [
      { stop: pieces[5], at: pieces[5] },
      { stop: ["never appears", pieces[6]], at: pieces[6] },
      { stop: (pieces[3] + pieces[4]).slice(3, 9), at: (pieces[3] + pieces[4]).slice(3, 9) },
    ];
    for (const { stop, at } of cases) {
      const want = greedyText.slice(0, greedyText.indexOf(at));
      const body = { model: STORIES, prompt: PROMPT, max_tokens: 16, temperature: 0, ignore_eos: true, stop };
      const r = await a.client.completions.create(body as OpenAI.CompletionCreateParamsNonStreaming);
      assert.equal(r.choices[0].text, want, `stop ${JSON.stringify(stop)}`);
      assert.equal(r.choices[0].finish_reason, "stop");
      let text = "", finish: string | null = null;
      for await (const c of await a.client.completions.create({ ...body, stream: true } as OpenAI.CompletionCreateParamsStreaming)) {
        text += c.choices[0].text;
        finish = c.choices[0].finish_reason ?? finish;
      }
      assert.equal(text, want, `streamed, stop ${JSON.stringify(stop)}`);
      assert.equal(finish, "stop");
    }
  });

  test("max_tokens and max_completion_tokens", async () => {
    const r = await a.client.completions.create({ model: STORIES, prompt: PROMPT, max_tokens: 5, temperature: 0.8, seed: 1, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(r.usage?.completion_tokens, 5);
    assert.equal(r.choices[0].finish_reason, "length");
    const c = await a.client.chat.completions.create({ model: STORIES, messages: [{ role: "user", content: "hi" }], max_completion_tokens: 3, temperature: 0, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(c.usage?.completion_tokens, 3);
    assert.equal(c.choices[0].finish_reason, "length");
  });

  test("seeded sampling is reproducible; another seed gives another answer", async () => {
    const ask = (seed: number) => a.client.completions.create({ model: STORIES, prompt: PROMPT, max_tokens: 24, temperature: 1, top_p: 0.95, seed, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming).then((r) => r.choices[0].text);
    const [x, y, z] = await Promise.all([ask(42), ask(42), ask(43)]);
    assert.equal(x, y);
    assert.notEqual(x, z);
  });

  test("logprobs: chat top_logprobs and completions logprobs", async () => {
    const c = await a.client.chat.completions.create({ model: STORIES, messages: [{ role: "user", content: "hi" }], max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const content = c.choices[0].logprobs!.content!;
    assert.equal(content.length, 6);
    assert.equal(content.map((t) => t.token).join(""), c.choices[0].message.content);
    for (const t of content) {
      assert.equal(t.top_logprobs.length, 3);
      assert.equal(t.top_logprobs[0].token, t.token, "greedy picks the most likely token");
      assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-9 && t.logprob <= 0);
      assert.ok(t.top_logprobs.reduce((s, x) => s + Math.exp(x.logprob), 0) <= 1 + 1e-6);
      assert.deepEqual(t.bytes, [...Buffer.from(t.token)]);
    }
    const p = await a.client.completions.create({ model: STORIES, prompt: PROMPT, max_tokens: 4, temperature: 0, logprobs: 2, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    const lp = p.choices[0].logprobs!;
    assert.equal(lp.tokens!.join(""), p.choices[0].text);
    assert.equal(lp.token_logprobs!.length, 4);
    assert.equal(Object.keys(lp.top_logprobs![0]).length, 2);
    assert.deepEqual(lp.text_offset!.slice(0, 2), [0, lp.tokens![0].length]);
    // Streamed, the log-probabilities arrive with their text.
    let n = 0;
    for await (const ch of await a.client.chat.completions.create({ model: STORIES, messages: [{ role: "user", content: "hi" }], max_tokens: 6, temperature: 0, logprobs: true, ignore_eos: true, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) {
      n += ch.choices[0]?.logprobs?.content?.length ?? 0;
    }
    assert.equal(n, 6);
  });

  test("completions: n choices (seed + i), streamed by index; echo puts the prompt first", async () => {
    const body = { model: STORIES, prompt: PROMPT, max_tokens: 6, temperature: 1, seed: 5, ignore_eos: true };
    const r = await a.client.completions.create({ ...body, n: 2 } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
    const second = await a.client.completions.create({ ...body, seed: 6 } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(r.choices[1].text, second.choices[0].text);
    assert.equal(r.usage?.completion_tokens, 12);
    const texts = ["", ""];
    for await (const c of await a.client.completions.create({ ...body, n: 2, stream: true } as OpenAI.CompletionCreateParamsStreaming)) for (const ch of c.choices) texts[ch.index] += ch.text;
    assert.deepEqual(texts, r.choices.map((c) => c.text));
    const echoed = await a.client.completions.create({ ...body, echo: true } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.equal(echoed.choices[0].text, PROMPT + r.choices[0].text);
  });

  test("16 concurrent streaming clients (8 slots, 8 queued) all complete with their own answers", async () => {
    const prompts = Array.from({ length: 16 }, (_, i) => [1, 20 + i * 7, 40 + i, 300 - i * 3]);
    const body = (i: number) => ({ model: STORIES, prompt: prompts[i], max_tokens: 24, temperature: i % 2 ? 0.9 : 0, seed: i, ignore_eos: true });
    const alone: string[] = [];
    for (let i = 0; i < 16; i++) alone.push((await a.client.completions.create(body(i) as OpenAI.CompletionCreateParamsNonStreaming)).choices[0].text);
    assert.ok(new Set(alone).size >= 12, "the prompts give different answers");
    let maxBusy = 0;
    const together = await Promise.all(prompts.map(async (_, i) => {
      let text = "";
      for await (const c of await a.client.completions.create({ ...body(i), stream: true } as OpenAI.CompletionCreateParamsStreaming)) {
        text += c.choices[0].text;
        if (i === 0) maxBusy = Math.max(maxBusy, (await health(a.url)).slots_busy);
      }
      return text;
    }));
    assert.deepEqual(together, alone);
    assert.ok(maxBusy > 1, `requests ran at the same time (at most ${maxBusy} busy)`);
    assert.equal((await health(a.url)).slots_busy, 0);
  });

  test("a client that disconnects mid-stream stops its generation and frees its slot", async () => {
    const before = await health(b.url);
    const ac = new AbortController();
    const stream = await b.client.completions.create({ model: "tiny", prompt: PROMPT, max_tokens: 250, temperature: 0, ignore_eos: true, stream: true } as OpenAI.CompletionCreateParamsStreaming, { signal: ac.signal });
    let got = 0;
    let finish: string | null = null;
    try {
      for await (const c of stream) {
        finish = c.choices[0].finish_reason ?? finish;
        if (c.choices[0].text && ++got === 2) ac.abort(); // the client's stream ends here, quietly
      }
    } catch (e) {
      assert.ok((e as Error).name === "AbortError" || e instanceof OpenAI.APIUserAbortError, String(e));
    }
    assert.equal(finish, null, "the stream was cut before its end");
    await until("the slot to be free", async () => (await health(b.url)).slots_busy === 0, 5_000);
    const after = await health(b.url);
    assert.equal(after.aborted, before.aborted + 1, "the generation ended as aborted");
    assert.equal(after.completed, before.completed, "and did not run to its end");
    // The same for a client waiting for a whole (non-streamed) answer.
    const ac2 = new AbortController();
    const pending = fetch(`${b.url}/v1/completions`, { method: "POST", signal: ac2.signal, headers: { "content-type": "application/json", authorization: "Bearer sesame" }, body: JSON.stringify({ model: "tiny", prompt: PROMPT, max_tokens: 250, ignore_eos: true }) }).catch((e: Error) => e);
    await until("the request to start", async () => (await health(b.url)).slots_busy === 1);
    ac2.abort();
    assert.ok((await pending) instanceof Error);
    await until("the slot to be free", async () => (await health(b.url)).slots_busy === 0, 5_000);
    assert.equal((await health(b.url)).aborted, before.aborted + 2);
    assert.equal((await health(b.url)).completed, before.completed);
    // The slot serves the next request.
    const r = await b.client.completions.create({ model: "tiny", prompt: PROMPT, max_tokens: 2, temperature: 0 });
    assert.equal(r.usage?.completion_tokens, 2);
  });

  test("503 when the queue is full; a queued client that leaves is dropped from the queue", async () => {
    const long = new AbortController(), queued = new AbortController();
    const stream = await b.client.completions.create({ model: "tiny", prompt: PROMPT, max_tokens: 250, temperature: 0, ignore_eos: true, stream: true } as OpenAI.CompletionCreateParamsStreaming, { signal: long.signal });
    const it = stream[Symbol.asyncIterator]();
    await it.next(); // it holds the only slot
    const waiting = b.client.completions.create({ model: "tiny", prompt: PROMPT, max_tokens: 2 }, { signal: queued.signal }).catch((e: Error) => e);
    await until("the second request to queue", async () => (await health(b.url)).queued === 1);
    const full = await postJson(b.url, "/v1/completions", JSON.stringify({ model: "tiny", prompt: PROMPT, max_tokens: 2 }), { authorization: "Bearer sesame" });
    assert.equal(full.status, 503);
    assertErrorShape(full.body, 503);
    assert.equal(full.body.error.code, "queue_full");
    queued.abort();
    assert.ok((await waiting) instanceof Error);
    await until("the queue to empty", async () => (await health(b.url)).queued === 0);
    long.abort();
    await it.return?.();
    await until("the slot to be free", async () => (await health(b.url)).slots_busy === 0);
  });

  test("401 for a missing or wrong API key; /health and / need none", async () => {
    const body = JSON.stringify({ model: "tiny", prompt: PROMPT, max_tokens: 1 });
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "sesame" }] as Record<string, string>[]) {
      const r = await postJson(b.url, "/v1/completions", body, headers);
      assert.equal(r.status, 401, JSON.stringify(headers));
      assertErrorShape(r.body, 401);
      assert.equal(r.body.error.type, "authentication_error");
    }
    for (const path of ["/v1/models", "/%761/models", "/v1/models/", "/v1/models?x=1"]) {
      const res = await fetch(b.url + path);
      assert.equal(res.status, 401, path);
    }
    const wrong = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: "nope", maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e: unknown) => e instanceof OpenAI.AuthenticationError && e.status === 401);
    assert.equal((await fetch(`${b.url}/health`)).status, 200);
    assert.equal((await fetch(`${b.url}/`)).status, 200);
    assert.equal((await b.client.models.list()).data[0].id, "tiny");
  });

  test("400 for malformed or invalid requests, with the offending parameter", async () => {
    const chat = (extra: Record<string, unknown>) => JSON.stringify({ model: STORIES, messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...extra });
    const cases: [string, string, string | null][] = [
      ["/v1/chat/completions", "{\"model\": ", null],
      ["/v1/chat/completions", "[1, 2]", null],
      ["/v1/chat/completions", chat({ temperature: "hot" }), "temperature"],
      ["/v1/chat/completions", chat({ temperature: 3 }), "temperature"],
      ["/v1/chat/completions", chat({ max_tokens: 1.5 }), "max_tokens"],
      ["/v1/chat/completions", chat({ max_tokens: -1 }), "max_tokens"],
      ["/v1/chat/completions", chat({ stream: "yes" }), "stream"],
      ["/v1/chat/completions", chat({ stop: 7 }), "stop"],
      ["/v1/chat/completions", chat({ stop: [""] }), "stop"],
      ["/v1/chat/completions", chat({ seed: "x" }), "seed"],
      ["/v1/chat/completions", chat({ n: 17 }), "n"],
      ["/v1/chat/completions", chat({ stop: ["a", "b", "c", "d", "e"] }), "stop"],
      ["/v1/chat/completions", chat({ no_such_field: 1 }), "no_such_field"],
      ["/v1/chat/completions", chat({ audio: { voice: "alloy", format: "mp3" } }), "audio"],
      ["/v1/chat/completions", chat({ store: true }), "store"],
      ["/v1/chat/completions", chat({ functions: [] }), "functions"],
      ["/v1/chat/completions", chat({ logit_bias: { "x": 1 } }), "logit_bias"],
      ["/v1/chat/completions", chat({ logit_bias: { "100000": 1 } }), "logit_bias"],
      ["/v1/chat/completions", chat({ logit_bias: { "5": 101 } }), "logit_bias[5]"],
      ["/v1/chat/completions", chat({ response_format: { type: "xml" } }), "response_format"],
      ["/v1/chat/completions", chat({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "a" } } } }), "response_format.json_schema.schema"],
      ["/v1/chat/completions", chat({ grammar: "root ::= nothing" }), "grammar"],
      ["/v1/chat/completions", chat({ grammar: "root ::= \"a\"", response_format: { type: "json_object" } }), "grammar"],
      ["/v1/chat/completions", chat({ tool_choice: "required" }), "tool_choice"],
      ["/v1/chat/completions", chat({ tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "g" } } }), "tool_choice"],
      ["/v1/completions", JSON.stringify({ model: STORIES, prompt: "x", suffix: "y" }), "suffix"],
      ["/v1/completions", JSON.stringify({ model: STORIES, prompt: "x", best_of: 2 }), "best_of"],
      ["/v1/chat/completions", chat({ top_logprobs: 2 }), "top_logprobs"],
      ["/v1/chat/completions", chat({ messages: "hi" }), "messages"],
      ["/v1/chat/completions", chat({ messages: [] }), "messages"],
      ["/v1/chat/completions", chat({ messages: [{ role: "user", content: 5 }] }), "messages"],
      ["/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: "hi" }] }), "model"],
      ["/v1/completions", JSON.stringify({ model: STORIES, prompt: 5 }), "prompt"],
      ["/v1/completions", JSON.stringify({ model: STORIES, prompt: [1, 100000] }), "prompt"],
      ["/v1/completions", JSON.stringify({ model: STORIES, prompt: "x", logprobs: 9 }), "logprobs"],
      ["/v1/completions", JSON.stringify({ model: STORIES, prompt: Array(600).fill(5) }), null],
      ["/v1/chat/completions", chat({ messages: [{ role: "user", content: "<t1>".repeat(600) }] }), null],
    ];
    for (const [path, body, param] of cases) {
      const r = await postJson(a.url, path, body);
      assert.equal(r.status, 400, `${body.slice(0, 80)} → ${JSON.stringify(r.body)}`);
      assertErrorShape(r.body, 400);
      assert.equal(r.body.error.type, "invalid_request_error");
      if (param) assert.equal(r.body.error.param, param, body.slice(0, 80));
    }
    const long = await postJson(a.url, "/v1/completions", JSON.stringify({ model: STORIES, prompt: Array(600).fill(5) }));
    assert.equal(long.body.error.code, "context_length_exceeded");
    assert.match(long.body.error.message, /longer than the context/);
    // Through the client: a BadRequestError carrying the body.
    await assert.rejects(a.client.chat.completions.create({ model: STORIES, messages: [{ role: "user", content: "hi" }], temperature: 5 }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "temperature");
  });

  test("404 for an unknown model or path; nothing in a request names a file", async () => {
    await assert.rejects(a.client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }),
      (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found");
    for (const name of ["../../etc/passwd", model(STORIES), `${STORIES}.gguf`]) {
      const r = await postJson(a.url, "/v1/completions", JSON.stringify({ model: name, prompt: "x", max_tokens: 1 }));
      assert.equal(r.status, 404, name);
      assertErrorShape(r.body, 404);
    }
    assert.equal((await fetch(`${a.url}/v1/models/${encodeURIComponent("../x")}`)).status, 404);
    for (const path of ["/v1/nothing", "/etc/passwd", "/..%2f..%2fpackage.json", "/v1/embeddings"]) {
      const res = await fetch(a.url + path);
      assert.equal(res.status, 404, path);
      assertErrorShape(await res.json(), 404);
    }
  });

  test("413 for a body over --body-limit", async () => {
    const r = await postJson(a.url, "/v1/completions", JSON.stringify({ model: STORIES, prompt: "x".repeat(100_000) }));
    assert.equal(r.status, 413);
    assertErrorShape(r.body, 413);
  });
});

describe("toy serve with a real chat template (SmolLM2)", { skip: fx.skip }, () => {
  const NAME = "SmolLM2-135M-Instruct.Q4_1";
  let s: Served;
  before(async () => { s = await serve(NAME, ["--backend", backend, "--parallel", "1", "--ctx", "256"]); });
  after(async () => { await s?.stop(); });

  test("greedy chat equals toy infer --messages on the same rendered prompt", async () => {
    const messages = [{ role: "system" as const, content: "Be brief." }, { role: "user" as const, content: "Hi!" }];
    const dir = mkdtempSync(join(tmpdir(), "toy-serve-"));
    writeFileSync(join(dir, "m.json"), JSON.stringify(messages));
    const [inf, r] = await Promise.all([
      new Promise<{ prompt_tokens: number[]; text: string }>((resolve, reject) => {
        // Asynchronously, so the server and toy infer run side by side.
        const p = spawn(process.execPath, [toyBin, "infer", model(NAME), "--messages", join(dir, "m.json"), "--temperature", "0", "--max-tokens", "3", "--json", "--backend", backend]);
        let out = "";
        p.stdout.on("data", (d: Buffer) => (out += d));
        p.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`toy infer exited ${code}`))));
      }),
      s.client.chat.completions.create({ model: NAME, messages, max_tokens: 3, temperature: 0 }),
    ]);
    assert.equal(r.usage?.prompt_tokens, inf.prompt_tokens.length);
    assert.equal(r.choices[0].message.content, inf.text);
    assert.ok(inf.text.length > 0);
  });
});

describe("toy serve: structured output, tools, n, penalties, logit_bias, logprobs (SmolLM2, openai client)", { skip: fx.skip }, () => {
  const NAME = "SmolLM2-135M-Instruct.Q4_1";
  let s: Served;
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  before(async () => { s = await serve(NAME, ["--backend", backend, "--parallel", "4", "--ctx", "768"]); });
  after(async () => { await s?.stop(); });

  const user = (content: string) => [{ role: "user" as const, content }];
  /** The text is a sentence of the grammar ("accept") or could still become one ("prefix"). */
  const grammarStatus = (gbnf: string, text: string) => {
    const r = new Recognizer(new Program(parseGbnf(gbnf)));
    const st = feed(r, r.start, new TextEncoder().encode(text));
    return st === DEAD ? "dead" : r.accepts(st) ? "accept" : "prefix";
  };

  test("response_format json_object: every choice is a JSON object, at any temperature; cut short, a valid prefix with finish_reason length", async () => {
    const r = await s.client.chat.completions.create({ model: NAME, messages: user("Describe a cat as JSON."), response_format: { type: "json_object" }, max_tokens: 48, n: 3, temperature: 1.6, top_p: 1, seed: 11, top_k: 0, min_p: 0 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(r.choices.length, 3);
    for (const c of r.choices) {
      const text = c.message.content!;
      if (c.finish_reason === "stop") assert.equal(typeof JSON.parse(text), "object", text);
      else assert.equal(grammarStatus(jsonObjectGbnf(), text), "prefix", text);
    }
    const short = await s.client.chat.completions.create({ model: NAME, messages: user("Describe a cat as JSON."), response_format: { type: "json_object" }, max_tokens: 4, temperature: 0 });
    assert.equal(short.choices[0].finish_reason, "length");
    assert.equal(grammarStatus(jsonObjectGbnf(), short.choices[0].message.content!), "prefix");
  });

  test("response_format json_schema (strict): the answer validates (ajv), streaming and not", async () => {
    const schema = {
      type: "object", additionalProperties: false, required: ["name", "age", "born", "pets"],
      properties: {
        name: { type: "string", maxLength: 20 }, age: { type: "integer", minimum: 0, maximum: 120 },
        born: { type: "string", format: "date" }, pets: { type: "array", items: { enum: ["cat", "dog"] }, maxItems: 2 },
        id: { anyOf: [{ type: "string", format: "uuid" }, { type: "null" }] },
      },
    };
    const validate = ajv.compile(schema);
    const response_format = { type: "json_schema" as const, json_schema: { name: "person", strict: true, schema } };
    const gbnf = schemaToGbnf(schema);
    const r = await s.client.chat.completions.create({ model: NAME, messages: user("Invent a person."), response_format, max_tokens: 80, n: 3, temperature: 1.3, seed: 3 });
    for (const c of r.choices) {
      // Whole answers validate; an answer cut short is the start of one.
      if (c.finish_reason === "length") { assert.equal(grammarStatus(gbnf, c.message.content!), "prefix"); continue; }
      assert.equal(c.finish_reason, "stop");
      const value = JSON.parse(c.message.content!);
      assert.ok(validate(value), `${c.message.content}: ${JSON.stringify(validate.errors)}`);
    }
    let text = "", finish: string | null = null;
    for await (const ch of await s.client.chat.completions.create({ model: NAME, messages: user("Invent a person."), response_format, max_tokens: 120, temperature: 0, stream: true })) {
      text += ch.choices[0]?.delta.content ?? "";
      finish = ch.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, "stop");
    assert.ok(validate(JSON.parse(text)), text);
  });

  test("grammar (GBNF, llama.cpp's extension) on chat and completions", async () => {
    const grammar = 'root ::= ("yes" | "no") ", because " [a-z ]{1,30} "."';
    const c = await s.client.chat.completions.create({ model: NAME, messages: user("Is the sky blue?"), grammar, max_tokens: 30, temperature: 0.7, seed: 1 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.match(c.choices[0].message.content!, /^(yes|no), because [a-z ]{1,30}\.$/);
    assert.equal(c.choices[0].finish_reason, "stop");
    const p = await s.client.completions.create({ model: NAME, prompt: "The answer is", grammar: 'root ::= " " [0-9]{2}', max_tokens: 10, temperature: 0 } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.match(p.choices[0].text, /^ [0-9]{2}$/);
  });

  const TOOLS: OpenAI.ChatCompletionFunctionTool[] = [
    { type: "function", function: { name: "get_weather", description: "Current weather in a city", parameters: { type: "object", properties: { city: { type: "string", maxLength: 30 }, unit: { enum: ["celsius", "fahrenheit"] } }, required: ["city", "unit"], additionalProperties: false } } },
    { type: "function", function: { name: "add", description: "Add two integers", parameters: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"], additionalProperties: false } } },
  ];
  const params = Object.fromEntries(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters!)]));
  const checkCall = (call: OpenAI.ChatCompletionMessageFunctionToolCall, name?: string) => {
    assert.equal(call.type, "function");
    assert.match(call.id, /^call_/);
    if (name) assert.equal(call.function.name, name);
    const validate = params[call.function.name];
    assert.ok(validate, `a known tool: ${call.function.name}`);
    assert.ok(validate(JSON.parse(call.function.arguments)), call.function.arguments);
  };

  test("tools, not streaming: required and a named function give valid calls; none gives text; auto gives either", async () => {
    const ask = (tool_choice: OpenAI.ChatCompletionToolChoiceOption, parallel_tool_calls = false) =>
      s.client.chat.completions.create({ model: NAME, messages: user("What is the weather in Paris?"), tools: TOOLS, tool_choice, parallel_tool_calls, max_tokens: 60, temperature: 0.8, seed: 2 });
    const required = await ask("required");
    assert.equal(required.choices[0].finish_reason, "tool_calls");
    assert.equal(required.choices[0].message.content, null);
    assert.equal(required.choices[0].message.tool_calls!.length, 1);
    checkCall(required.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall);
    const named = await ask({ type: "function", function: { name: "add" } });
    assert.equal(named.choices[0].finish_reason, "tool_calls");
    checkCall(named.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall, "add");
    const none = await ask("none");
    assert.equal(none.choices[0].message.tool_calls, undefined);
    assert.equal(typeof none.choices[0].message.content, "string");
    assert.notEqual(none.choices[0].finish_reason, "tool_calls");
    const auto = await ask("auto");
    const m = auto.choices[0].message;
    if (auto.choices[0].finish_reason === "tool_calls") for (const c of m.tool_calls!) checkCall(c as OpenAI.ChatCompletionMessageFunctionToolCall);
    else assert.equal(typeof m.content, "string");
    // The call and its result go back into the conversation.
    const call = named.choices[0].message.tool_calls![0];
    const followUp = await s.client.chat.completions.create({
      model: NAME, tools: TOOLS, max_tokens: 8, temperature: 0,
      messages: [...user("Add 2 and 3."), { role: "assistant", content: null, tool_calls: [call] }, { role: "tool", tool_call_id: call.id, content: "5" }],
    });
    assert.equal(followUp.choices[0].message.role, "assistant");
  });

  test("tools, streaming: delta.tool_calls as OpenAI sends them (id and name first, then arguments), finish_reason tool_calls", async () => {
    for (const tool_choice of ["required", { type: "function", function: { name: "get_weather" } }] as OpenAI.ChatCompletionToolChoiceOption[]) {
      const calls: { id?: string; name?: string; args: string }[] = [];
      let finish: string | null = null, content = "";
      const stream = await s.client.chat.completions.create({ model: NAME, messages: user("Weather in Oslo, in celsius?"), tools: TOOLS, tool_choice, parallel_tool_calls: false, max_tokens: 60, temperature: 0, stream: true });
      for await (const ch of stream) {
        const d = ch.choices[0]?.delta;
        content += d?.content ?? "";
        for (const tc of d?.tool_calls ?? []) {
          if (tc.id) { assert.equal(calls.length, tc.index, "a new call starts with its id"); calls.push({ id: tc.id, name: tc.function?.name, args: tc.function?.arguments ?? "" }); }
          else calls[tc.index].args += tc.function?.arguments ?? "";
        }
        finish = ch.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(finish, "tool_calls");
      assert.equal(content, "");
      assert.equal(calls.length, 1);
      checkCall({ id: calls[0].id!, type: "function", function: { name: calls[0].name!, arguments: calls[0].args } }, typeof tool_choice === "object" ? "get_weather" : undefined);
    }
    // The same call, streamed or not (same seed).
    const body = { model: NAME, messages: user("Add 40 and 2."), tools: TOOLS, tool_choice: "required" as const, parallel_tool_calls: false, max_tokens: 60, temperature: 0.7, seed: 9 };
    const whole = await s.client.chat.completions.create(body);
    // The client's own stream helper puts the deltas back together into the same message.
    const acc = await s.client.chat.completions.stream(body).finalChatCompletion();
    const [a1, w1] = [acc.choices[0].message.tool_calls![0], whole.choices[0].message.tool_calls![0]] as OpenAI.ChatCompletionMessageFunctionToolCall[];
    assert.deepEqual([a1.function.name, a1.function.arguments], [w1.function.name, w1.function.arguments]);
    assert.equal(acc.choices[0].finish_reason, "tool_calls");
  });

  test("n: independent choices, choice i samples with seed + i; streamed with their own indices", async () => {
    const body = { model: NAME, messages: user("Name a color."), max_tokens: 8, temperature: 1, seed: 100, ignore_eos: true };
    const r = await s.client.chat.completions.create({ ...body, n: 3 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
    assert.equal(r.usage?.completion_tokens, 24);
    for (let i = 0; i < 3; i++) {
      const one = await s.client.chat.completions.create({ ...body, seed: 100 + i } as OpenAI.ChatCompletionCreateParamsNonStreaming);
      assert.equal(r.choices[i].message.content, one.choices[0].message.content, `choice ${i}`);
    }
    const texts = ["", ""], finishes: (string | null)[] = [null, null];
    let lps = [0, 0];
    for await (const ch of await s.client.chat.completions.create({ ...body, n: 2, stream: true, logprobs: true, top_logprobs: 2 } as OpenAI.ChatCompletionCreateParamsStreaming)) {
      for (const c of ch.choices) {
        texts[c.index] += c.delta.content ?? "";
        finishes[c.index] = c.finish_reason ?? finishes[c.index];
        lps[c.index] += c.logprobs?.content?.length ?? 0;
        for (const t of c.logprobs?.content ?? []) assert.equal(t.top_logprobs.length, 2);
      }
    }
    assert.deepEqual(texts, r.choices.slice(0, 2).map((c) => c.message.content));
    assert.deepEqual(finishes, ["length", "length"]);
    assert.deepEqual(lps, [8, 8], "every token's log-probability, in each choice's stream");
  });

  test("presence / frequency penalties and logit_bias change the greedy answer as OpenAI defines them", async () => {
    const body = { model: NAME, messages: user("Repeat the word 'cat' many times."), max_tokens: 24, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 5 };
    const plain = await s.client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const repeats = (text: string[]) => text.length - new Set(text).size;
    const freq = await s.client.chat.completions.create({ ...body, frequency_penalty: 2 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const pres = await s.client.chat.completions.create({ ...body, presence_penalty: 2 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const tokensOf = (r: OpenAI.ChatCompletion) => r.choices[0].logprobs!.content!.map((t) => t.token);
    assert.ok(repeats(tokensOf(plain)) > 0, "the plain answer repeats tokens");
    assert.ok(repeats(tokensOf(freq)) < repeats(tokensOf(plain)), `frequency_penalty repeats less: ${freq.choices[0].message.content}`);
    assert.ok(repeats(tokensOf(pres)) < repeats(tokensOf(plain)), `presence_penalty repeats less: ${pres.choices[0].message.content}`);
    // logit_bias: -100 bans the greedy first token; +100 forces a token everywhere.
    const file = model(NAME);
    const tokenizer = tokenizerFromMetadata(readGGUFHeader(file).metadata, file);
    const first = tokensOf(plain)[0];
    const firstId = tokenizer.encode(first, { addBos: false });
    assert.equal(firstId.length, 1, first);
    const banned = await s.client.chat.completions.create({ ...body, max_tokens: 3, logit_bias: { [String(firstId[0])]: -100 } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.notEqual(tokensOf(banned)[0], first);
    const cat = tokenizer.encode(" cat", { addBos: false });
    const forced = await s.client.chat.completions.create({ ...body, max_tokens: 4, logit_bias: { [String(cat[0])]: 100 } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.deepEqual(tokensOf(forced), Array(4).fill(tokenizer.decode([cat[0]])));
  });

  test("stop: up to four strings", async () => {
    const base = await s.client.chat.completions.create({ model: NAME, messages: user("Count from 1 to 10, separated by commas."), max_tokens: 30, temperature: 0 });
    const text = base.choices[0].message.content!;
    const at = text.search(/[5]/);
    assert.ok(at > 0, text);
    const r = await s.client.chat.completions.create({ model: NAME, messages: user("Count from 1 to 10, separated by commas."), max_tokens: 30, temperature: 0, stop: ["never", "nor this", "5", "no"] });
    assert.equal(r.choices[0].message.content, text.slice(0, at));
    assert.equal(r.choices[0].finish_reason, "stop");
  });
});

