// A load measurement for `toy serve`: C clients at once, each streaming one completion, for
// each C asked for. Reports aggregate generated tokens/s and time to first token.
//
//   node dist/src/serve/loadtest.js http://127.0.0.1:4567 MODEL [--clients 1,4,16] [--max-tokens 64] [--rounds 2] [--distinct]
//
// Every client sends the same prompt unless --distinct gives each request its own start (then no
// request finds its prompt in a slot's cache, as with real users' different prompts).
//
// Each request goes out on a connection opened before the clock starts (kept alive, as an API
// client's pool keeps them): TTFT is the server's, not this client's TCP handshakes. With
// TOY_SERVE_TRACE=FILE, each request's send, response head and first text are written there
// (trace.ts), to be read side by side with the server's own trace.

import { flushTrace, trace } from "./trace.js";

interface Sample { ttftMs: number; tokens: number; ms: number }

const PROMPT = "Once upon a time, there was a little girl named Lily.";

async function streamOne(url: string, model: string, maxTokens: number, seed: number, prompt = PROMPT): Promise<Sample> {
  const t0 = performance.now();
  trace("c.send", seed);
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${process.env.TOY_API_KEY ?? ""}` },
    body: JSON.stringify({ model, prompt, max_tokens: maxTokens, temperature: 0.8, seed, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  trace("c.head", seed);
  let ttft = 0, tokens = 0, buffer = "";
  const decoder = new TextDecoder();
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const event = buffer.slice(0, cut).replace(/^data: /, "");
      buffer = buffer.slice(cut + 2);
      if (event === "[DONE]") continue;
      const chunk = JSON.parse(event) as { choices: { text: string }[]; usage?: { completion_tokens: number } };
      if (!ttft && chunk.choices[0]?.text) { ttft = performance.now() - t0; trace("c.first", seed); }
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
    }
  }
  return { ttftMs: ttft, tokens, ms: performance.now() - t0 };
}

/** One turn of the event loop: fetch returns a finished response's connection to its pool only then. */
const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * Open `c` connections (c requests at once), so that each measured request is sent on a kept-alive
 * connection as an API client's pool does, and TTFT does not count this client's TCP handshakes.
 */
async function openConnections(url: string, c: number): Promise<void> {
  await Promise.all(Array.from({ length: c }, async () => { await (await fetch(`${url}/health`)).text(); }));
  await turn();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const [url, model, ...rest] = process.argv.slice(2);
  if (!url || !model) throw new Error("usage: loadtest.js URL MODEL [--clients 1,4,16] [--max-tokens 64] [--rounds 2] [--distinct]");
  const flag = (name: string, dflt: string) => { const i = rest.indexOf(name); return i === -1 ? dflt : rest[i + 1]; };
  const clients = flag("--clients", "1,4,16").split(",").map(Number);
  const maxTokens = Number(flag("--max-tokens", "64"));
  const rounds = Number(flag("--rounds", "2"));
  const distinct = rest.includes("--distinct");
  let requests = 0;
  const promptOf = () => (distinct ? `Story ${++requests}. ${PROMPT}` : PROMPT);
  await streamOne(url, model, 4, 0); // warm up
  console.log("| clients | aggregate tokens/s | per-client tokens/s | TTFT median (ms) | TTFT max (ms) |");
  console.log("|---:|---:|---:|---:|---:|");
  for (const c of clients) {
    let tokens = 0, wall = 0;
    const ttfts: number[] = [], perClient: number[] = [];
    await openConnections(url, c);
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      const samples = await Promise.all(Array.from({ length: c }, (_, i) => streamOne(url, model, maxTokens, r * 100 + i, promptOf())));
      wall += performance.now() - t0;
      await turn();
      for (const s of samples) {
        tokens += s.tokens;
        ttfts.push(s.ttftMs);
        perClient.push(s.tokens / ((s.ms - s.ttftMs) / 1000));
      }
    }
    console.log(`| ${c} | ${(tokens / (wall / 1000)).toFixed(1)} | ${median(perClient).toFixed(1)} | ${median(ttfts).toFixed(0)} | ${Math.max(...ttfts).toFixed(0)} |`);
  }
}

await main();
flushTrace();
