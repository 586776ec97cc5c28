// Answers independent of load: 16 clients at once (completions and chat, greedy and sampled at
// several temperatures, streaming and not, prompts of many lengths sharing prefixes) each get,
// token for token and bit for bit in their log-probabilities, what the same request gets alone.
// The batched round runs 20 times against the same solo answers, through one server whose
// slots keep their caches between rounds (so prefixes are reused from other requests' work)
// and whose small row budget reads prompts in chunks that depend on what else runs.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type OpenAI from "openai";
import { cpuBackend } from "../src/backends/index.js";
import { fixtures } from "./helpers/fixtures.js";
import { metricValue, serve, type Served } from "./helpers/serve.js";
import { webgpu } from "./helpers/webgpu.js";

const fx = fixtures();
const MODEL = "stories260K";
const CLIENTS = 16;
const ROUNDS = Number(process.env.TOY_INVARIANCE_ROUNDS ?? 20);
/** llvmpipe runs the webgpu backend slowly on the CPU: fewer rounds there unless asked. */
const GPU_ROUNDS = Number(process.env.TOY_INVARIANCE_ROUNDS ?? 3);

/** Request i: its endpoint, sampling, streaming and prompt (token ids, some sharing a start). */
function request(i: number) {
  let x = 12345 + (i % 3) * 777; // prompts of the same group share their first 24 tokens
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const ids = Array.from({ length: 24 }, () => 3 + (next() % 500));
  x = 999 + i;
  for (let n = 0; n < (i * 37) % 90; n++) ids.push(3 + (next() % 500));
  const prompt = ids.slice(0, 3 + ((i * 53) % 110));
  const common = {
    model: MODEL, max_tokens: 16, ignore_eos: true, seed: 100 + i,
    temperature: [0, 0.6, 1.0, 1.4][i % 4], stream: i % 2 === 1,
    ...(i % 5 === 0 ? { repeat_penalty: 1.1 } : {}),
  };
  return i % 4 === 3
    ? { chat: true as const, body: { ...common, messages: [{ role: "user", content: `Tell story number ${i}.` }], logprobs: true, top_logprobs: 3 } }
    : { chat: false as const, body: { ...common, prompt, logprobs: 3 } };
}

interface Answer { text: string; finish: string | null; logprobs: unknown[] }

/** One request, streamed or not, reduced to its text, finish reason and every token's log-probabilities. */
async function ask(client: OpenAI, i: number): Promise<Answer> {
  const { chat, body } = request(i);
  if (chat) {
    if (!body.stream) {
      const r = await client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming);
      return { text: r.choices[0].message.content ?? "", finish: r.choices[0].finish_reason, logprobs: r.choices[0].logprobs?.content ?? [] };
    }
    const out: Answer = { text: "", finish: null, logprobs: [] };
    for await (const c of await client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsStreaming)) {
      const ch = c.choices[0];
      if (!ch) continue;
      out.text += ch.delta.content ?? "";
      out.finish = ch.finish_reason ?? out.finish;
      out.logprobs.push(...(ch.logprobs?.content ?? []));
    }
    return out;
  }
  const perToken = (lp: OpenAI.Completions.CompletionChoice.Logprobs | null | undefined) =>
    (lp?.tokens ?? []).map((t, k) => ({ token: t, logprob: lp!.token_logprobs![k], top: lp!.top_logprobs![k] }));
  if (!body.stream) {
    const r = await client.completions.create(body as OpenAI.CompletionCreateParamsNonStreaming);
    return { text: r.choices[0].text, finish: r.choices[0].finish_reason, logprobs: perToken(r.choices[0].logprobs) };
  }
  const out: Answer = { text: "", finish: null, logprobs: [] };
  for await (const c of await client.completions.create(body as OpenAI.CompletionCreateParamsStreaming)) {
    out.text += c.choices[0].text;
    out.finish = c.choices[0].finish_reason ?? out.finish;
    out.logprobs.push(...perToken(c.choices[0].logprobs));
  }
  return out;
}

/**
 * The ts backend computes every row on its own in float64 sums (row-invariant by construction).
 * The cpu backend's kernels must give each row the same bits whatever the number of rows. The
 * webgpu kernels too: each output row's sums run in a fixed order that does not depend on the
 * rows around it (docs/serve.md); it skips, visibly, without an adapter.
 */
const gpu = await webgpu();
const backends = ["ts", ...("error" in cpuBackend() ? [] : ["cpu"]), "webgpu"];

for (const name of backends) {
  const rounds = name === "webgpu" ? GPU_ROUNDS : ROUNDS;
  describe(`toy serve answers do not depend on load (${MODEL}, ${name} backend)`, { skip: fx.skip || (name === "webgpu" && gpu.skip) }, () => {
    let s: Served;
    const solo: Answer[] = [];
    before(async () => {
      s = await serve(join(fx.dir, "models", `${MODEL}.gguf`), ["--backend", name, "--parallel", "8", "--queue", "16", "--batch-tokens", "24"]);
      for (let i = 0; i < CLIENTS; i++) solo.push(await ask(s.client, i));
    });
    after(async () => { await s?.stop(); });

    test("the solo answers are varied and complete", () => {
      assert.ok(new Set(solo.map((a) => a.text)).size >= 12, "the requests give different answers");
      for (const a of solo) {
        assert.equal(a.finish, "length");
        assert.equal(a.logprobs.length, 16);
      }
    });

    test(`${CLIENTS} clients at once get their solo answers, bit for bit, ${rounds} rounds in a row`, async () => {
      for (let round = 0; round < rounds; round++) {
        const together = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => ask(s.client, i)));
        for (let i = 0; i < CLIENTS; i++) {
          assert.deepEqual(together[i], solo[i], `round ${round + 1}: client ${i} (${JSON.stringify(request(i).body).slice(0, 120)}) differs from its solo answer`);
        }
      }
      // What was checked includes prompt starts copied from other slots' caches.
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      assert.ok(metricValue(metrics, "toy_prompt_tokens_shared_total") > 0, "no prompt start was copied between slots");
    });
  });
}
