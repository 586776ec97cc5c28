// A load measurement for `toy serve`: C clients at once, each streaming one completion, for
// each C asked for. Reports aggregate generated tokens/s and time to first token.
//
//   node dist/src/serve/loadtest.js http://127.0.0.1:4567 MODEL [--clients 1,4,16] [--max-tokens 64] [--rounds 2] [--distinct]
//
// Every client sends the same prompt unless --distinct gives each request its own start (then no
// request finds its prompt in a slot's cache, as with real users' different prompts).
//
// Each request goes out on a connection opened before the round's clock starts (kept alive, as an
// API client's pool keeps them): TTFT is the server's, not this client's TCP handshakes. With
// TOY_SERVE_TRACE=FILE, each request's send, response head and first text are written there
// (trace.ts), to be read side by side with the server's own trace.

import { Agent, request } from "node:http";
import { flushTrace, trace } from "./trace.js";

interface Sample { ttftMs: number; tokens: number; ms: number }

const PROMPT = "Once upon a time, there was a little girl named Lily.";

/** One HTTP request on `agent`'s connections; `onData` sees the body as it arrives. */
function send(agent: Agent, url: string, method: "GET" | "POST", body: string | null, onHead: () => void, onData: (text: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}`, {
      agent, method,
      headers: body === null ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${process.env.TOY_API_KEY ?? ""}` },
    }, (res) => {
      const chunks: string[] = [];
      if (res.statusCode !== 200) {
        res.setEncoding("utf8").on("data", (d: string) => chunks.push(d)).on("end", () => reject(new Error(`HTTP ${res.statusCode}: ${chunks.join("")}`)));
        return;
      }
      onHead();
      res.setEncoding("utf8").on("data", onData).on("end", resolve).on("error", reject);
    });
    req.on("error", reject);
    req.end(body ?? undefined);
  });
}

async function streamOne(agent: Agent, url: string, model: string, maxTokens: number, seed: number, prompt = PROMPT): Promise<Sample> {
  const t0 = performance.now();
  trace("c.send", seed);
  const body = JSON.stringify({ model, prompt, max_tokens: maxTokens, temperature: 0.8, seed, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  let ttft = 0, tokens = 0, buffer = "";
  await send(agent, `${url}/v1/completions`, "POST", body, () => trace("c.head", seed), (text) => {
    buffer += text;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const event = buffer.slice(0, cut).replace(/^data: /, "");
      buffer = buffer.slice(cut + 2);
      if (event === "[DONE]") continue;
      const chunk = JSON.parse(event) as { choices: { text: string }[]; usage?: { completion_tokens: number } };
      if (!ttft && chunk.choices[0]?.text) { ttft = performance.now() - t0; trace("c.first", seed); }
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
    }
  });
  return { ttftMs: ttft, tokens, ms: performance.now() - t0 };
}

/**
 * `c` connections opened (c requests at once) before a round, on an agent of its own, so that each
 * measured request is sent on a kept-alive connection as an API client's pool does and TTFT does
 * not count this client's TCP handshakes. A fresh agent per round: a server may close a
 * connection after a few requests (llama-server does), and a request sent on a connection the
 * server has just closed fails.
 */
async function openConnections(url: string, c: number): Promise<Agent> {
  const agent = new Agent({ keepAlive: true, maxSockets: c });
  await Promise.all(Array.from({ length: c }, () => send(agent, `${url}/health`, "GET", null, () => {}, () => {})));
  await new Promise<void>((r) => setImmediate(r)); // the sockets back in the agent's free list
  return agent;
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
  const warm = await openConnections(url, 1);
  await streamOne(warm, url, model, 4, 0); // warm up
  warm.destroy();
  console.log("| clients | aggregate tokens/s | per-client tokens/s | TTFT median (ms) | TTFT max (ms) |");
  console.log("|---:|---:|---:|---:|---:|");
  for (const c of clients) {
    let tokens = 0, wall = 0;
    const ttfts: number[] = [], perClient: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const agent = await openConnections(url, c);
      const t0 = performance.now();
      const samples = await Promise.all(Array.from({ length: c }, (_, i) => streamOne(agent, url, model, maxTokens, r * 100 + i, promptOf())));
      wall += performance.now() - t0;
      agent.destroy();
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
