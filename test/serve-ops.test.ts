// Operating `toy serve`: GET /metrics (Prometheus text format), /health and /ready, and SIGTERM
// draining (running requests finish, new ones get 503, the process exits 0; --drain-timeout
// cuts off what is still running).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type OpenAI from "openai";
import { cpuBackend } from "../src/backends/index.js";
import { fixtures } from "./helpers/fixtures.js";
import { metricValue, serve, until, type Served } from "./helpers/serve.js";

const fx = fixtures();
const backend = "error" in cpuBackend() ? "ts" : "cpu";
const model = (name: string) => join(fx.dir, "models", `${name}.gguf`);
const STORIES = "stories260K";
const PROMPT = "Once upon a time";

async function metrics(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return res.text();
}

async function health(url: string) {
  return (await (await fetch(`${url}/health`)).json()) as { slots_busy: number; queued: number };
}

describe("toy serve: /metrics, /health, /ready", { skip: fx.skip }, () => {
  let s: Served;
  before(async () => { s = await serve(model(STORIES), ["--backend", backend, "--parallel", "2", "--api-key", "k"], "k"); });
  after(async () => { await s?.stop(); });

  test("/health and /ready answer without the API key once the model is warmed up", async () => {
    assert.match(s.stderr(), /warmed up in \d+ ms/);
    const ready = await fetch(`${s.url}/ready`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: "ready", model: STORIES });
    assert.equal((await fetch(`${s.url}/health`)).status, 200);
    assert.equal((await fetch(`${s.url}/v1/models`)).status, 401, "the API routes still need the key");
  });

  test("/metrics counts requests by status, tokens, latencies, and shows slots, queue and KV cache", async () => {
    const m0 = await metrics(s.url);
    assert.equal(metricValue(m0, "toy_slots"), 2);
    assert.equal(metricValue(m0, "toy_slots_busy"), 0);
    assert.equal(metricValue(m0, "toy_queue_depth"), 0);
    assert.equal(metricValue(m0, "toy_queue_capacity"), 64);
    assert.ok(metricValue(m0, "toy_kv_cache_positions") > 0);
    assert.ok(metricValue(m0, "process_cpu_seconds_total") > 0, "process metrics are included");

    const n = 3, tokens = 5;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => s.client.completions.create({ model: STORIES, prompt: PROMPT, max_tokens: tokens, temperature: 0.5, seed: i, ignore_eos: true, stream: i === 0 } as OpenAI.CompletionCreateParamsNonStreaming)));
    assert.equal(answers.length, n);
    const unauthorized = await fetch(`${s.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(unauthorized.status, 401);
    const bad = await fetch(`${s.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: JSON.stringify({ model: STORIES, prompt: PROMPT, temperature: 9 }) });
    assert.equal(bad.status, 400);

    await until("the last response to be counted", async () => metricValue(await metrics(s.url), "toy_http_requests_total", { route: "/v1/completions" }) >= n + 2);
    const m = await metrics(s.url);
    const delta = (name: string, labels: Record<string, string> = {}) => metricValue(m, name, labels) - metricValue(m0, name, labels);
    assert.equal(delta("toy_http_requests_total", { route: "/v1/completions", status: "200" }), n);
    assert.equal(delta("toy_http_requests_total", { route: "/v1/completions", status: "400" }), 1);
    assert.equal(delta("toy_http_requests_total", { route: "/v1/completions", status: "401" }), 1);
    assert.equal(delta("toy_generations_total", { finish_reason: "length" }), n);
    assert.equal(delta("toy_generated_tokens_total"), n * tokens);
    assert.ok(delta("toy_prompt_tokens_total") >= n * 4);
    // One prompt, 3 requests on 2 slots: the second slot copies it from the first.
    assert.ok(delta("toy_prompt_tokens_shared_total") > 0, "a prompt another slot held was copied");
    assert.ok(delta("toy_prompt_tokens_cached_total") >= delta("toy_prompt_tokens_shared_total"));
    assert.equal(delta("toy_time_to_first_token_seconds_count"), n);
    assert.equal(delta("toy_time_per_output_token_seconds_count"), n * (tokens - 1));
    assert.ok(delta("toy_time_to_first_token_seconds_sum") > 0);
    assert.equal(metricValue(m, "toy_slots_busy"), 0);
    assert.ok(metricValue(m, "toy_kv_cache_positions_kept") > 0, "the idle slots keep their prompts for reuse");
    assert.match(m, /# TYPE toy_time_to_first_token_seconds histogram/);
    assert.match(m, /toy_time_to_first_token_seconds_bucket\{le="0.1",model="stories260K"\} \d/);
  });
});

describe("toy serve: SIGTERM drains", { skip: fx.skip }, () => {
  // llama-tiny on the ts backend: slow enough that a generation is still running when the signal comes.
  const TINY = model("llama-tiny");
  const body = (maxTokens: number, stream = false) => ({ model: "llama-tiny", prompt: PROMPT, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream });

  test("running requests finish, new ones get 503 and /ready 503, then the process exits 0", async () => {
    const s = await serve(TINY, ["--backend", "ts", "--parallel", "2", "--drain-timeout", "60"]);
    try {
      const running = [
        s.client.completions.create(body(120) as OpenAI.CompletionCreateParamsNonStreaming),
        (async () => {
          let text = "", finish: string | null = null;
          for await (const c of await s.client.completions.create(body(120, true) as OpenAI.CompletionCreateParamsStreaming)) {
            text += c.choices[0].text;
            finish = c.choices[0].finish_reason ?? finish;
          }
          return { text, finish };
        })(),
      ] as const;
      await until("both requests to run", async () => (await health(s.url)).slots_busy === 2);
      const exited = s.stop("SIGTERM");
      await until("the server to drain", async () => (await fetch(`${s.url}/ready`)).status === 503);
      assert.deepEqual(await (await fetch(`${s.url}/ready`)).json(), { status: "draining", model: "llama-tiny" });
      const late = await fetch(`${s.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body(2)) });
      assert.equal(late.status, 503);
      assert.equal(((await late.json()) as { error: { code: string } }).error.code, "unavailable");
      const [whole, streamed] = await Promise.all(running);
      assert.equal(whole.usage?.completion_tokens, 120);
      assert.equal(whole.choices[0].finish_reason, "length");
      assert.equal(streamed.finish, "length");
      assert.equal(streamed.text, whole.choices[0].text, "the streamed answer ran to its end too");
      assert.equal(await exited, 0);
      assert.match(s.stderr(), /toy: drained/);
    } finally {
      await s.stop("SIGKILL");
    }
  });

  test("--drain-timeout cuts off what still runs and exits 0", async () => {
    const s = await serve(TINY, ["--backend", "ts", "--parallel", "1", "--drain-timeout", "0.2"]);
    try {
      const long = fetch(`${s.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body(100_000)) }).then((r) => r.status, (e: Error) => e);
      await until("the request to run", async () => (await health(s.url)).slots_busy === 1);
      const t0 = Date.now();
      assert.equal(await s.stop("SIGTERM"), 0);
      assert.ok(Date.now() - t0 < 20_000, "it did not wait for the generation to end");
      assert.match(s.stderr(), /drain timed out; requests cut off: 1/);
      assert.ok(await long instanceof Error, "the cut-off request's connection was closed");
    } finally {
      await s.stop("SIGKILL");
    }
  });
});
