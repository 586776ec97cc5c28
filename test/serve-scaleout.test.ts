// Scaling out: two `toy serve` replicas behind Debian's haproxy on localhost (the configuration
// docs/serve.md shows). 64 requests through the balancer are all answered and both replicas'
// /metrics show work; then one replica gets SIGTERM in the middle of a load and no request is
// lost: it finishes what it runs, haproxy's health check on /ready takes it out, and what it
// refuses while draining (503) or can no longer take (connection refused) is sent to the other.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { cpuBackend } from "../src/backends/index.js";
import { fixtures } from "./helpers/fixtures.js";
import { metricValue, serve, until, type Served } from "./helpers/serve.js";

const fx = fixtures();
const backend = "error" in cpuBackend() ? "ts" : "cpu";
const MODEL = "stories260K";

const haproxyMissing = spawnSync("haproxy", ["-v"]).status !== 0;
if (haproxyMissing) console.warn("SKIPPED: haproxy not found (apt-get install haproxy) — the scale-out test needs it");
const skip = fx.skip || (haproxyMissing ? "SKIPPED: haproxy not found (apt-get install haproxy)" : false);

/** A free TCP port on the loopback address (haproxy cannot bind port 0 and report it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** The configuration of docs/serve.md ("Scaling out"), for these ports. */
function haproxyConfig(port: number, replicas: number[]): string {
  return `global
  maxconn 1024

defaults
  mode http
  timeout connect 2s
  timeout client 5m
  timeout server 5m
  # A check may wait this long for /ready's answer once connected (without it, the whole check
  # must fit in "inter": a replica busy for 250 ms on a loaded machine was taken out, and with
  # both out a request got haproxy's own 503). A draining replica's 503 or a refused connection
  # still takes a replica out at once.
  timeout check 2s
  # A request a replica refuses (503 while it drains, or connection refused once it is gone) is
  # sent again, to another replica: the whole body is buffered so that it can be.
  option http-buffer-request
  retries 3
  retry-on conn-failure empty-response 503
  option redispatch 1

frontend toy
  bind 127.0.0.1:${port}
  default_backend replicas

backend replicas
  balance leastconn
  option httpchk GET /ready
  http-check expect status 200
  default-server inter 250ms fall 1 rise 2
${replicas.map((p, i) => `  server toy${i} 127.0.0.1:${p} check`).join("\n")}
`;
}

interface Outcome { status: "ok" | "error"; tokens: number; detail: string }

describe("toy serve behind haproxy: two replicas", { skip }, () => {
  let replicas: Served[] = [];
  let lb: ChildProcess | undefined;
  let lbLog = "";
  let client: OpenAI;
  let lbUrl = "";

  before(async () => {
    replicas = await Promise.all([0, 1].map(() => serve(join(fx.dir, "models", `${MODEL}.gguf`), ["--backend", backend, "--parallel", "4", "--queue", "64", "--drain-timeout", "60"])));
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "toy-haproxy-"));
    writeFileSync(join(dir, "haproxy.cfg"), haproxyConfig(port, replicas.map((r) => r.port)));
    lb = spawn("haproxy", ["-db", "-f", join(dir, "haproxy.cfg")], { stdio: ["ignore", "pipe", "pipe"] });
    lb.stdout!.on("data", (d: Buffer) => { lbLog += d; });
    lb.stderr!.on("data", (d: Buffer) => { lbLog += d; });
    lbUrl = `http://127.0.0.1:${port}`;
    await until("haproxy to answer", async () => (await fetch(`${lbUrl}/ready`).catch(() => null))?.status === 200, 20_000);
    client = new OpenAI({ baseURL: `${lbUrl}/v1`, apiKey: "unused", maxRetries: 0, timeout: 120_000 });
  });
  after(async () => {
    lb?.kill("SIGTERM");
    await Promise.all(replicas.map((r) => r.stop("SIGKILL")));
  });

  /** One request through the balancer (every fourth streamed), reduced to what came back. */
  async function one(i: number, maxTokens: number): Promise<Outcome> {
    const body = { model: MODEL, prompt: `Once upon a time, number ${i}`, max_tokens: maxTokens, temperature: 0.7, seed: i, ignore_eos: true };
    try {
      if (i % 4 === 0) {
        let tokens = 0, finish: string | null = null;
        for await (const c of await client.completions.create({ ...body, stream: true, stream_options: { include_usage: true } } as OpenAI.CompletionCreateParamsStreaming)) {
          if (c.usage) tokens = c.usage.completion_tokens;
          finish = c.choices[0]?.finish_reason ?? finish;
        }
        return { status: finish === "length" ? "ok" : "error", tokens, detail: `stream ended with ${finish}` };
      }
      const r = await client.completions.create(body as OpenAI.CompletionCreateParamsNonStreaming);
      return { status: "ok", tokens: r.usage?.completion_tokens ?? 0, detail: r.choices[0].finish_reason };
    } catch (e) {
      return { status: "error", tokens: 0, detail: String(e) };
    }
  }

  /** n requests, `concurrency` at a time. */
  async function load(n: number, concurrency: number, maxTokens: number, onDone?: (done: number, started: number) => void): Promise<Outcome[]> {
    const out: Outcome[] = new Array(n);
    let next = 0, done = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await one(i, maxTokens);
        onDone?.(++done, next);
      }
    }));
    return out;
  }

  const served = async (r: Served) => metricValue(await (await fetch(`${r.url}/metrics`)).text(), "toy_generations_total");

  test("64 requests through the balancer are all answered, and both replicas did work", async () => {
    const before = await Promise.all(replicas.map(served));
    const out = await load(64, 16, 8);
    const failed = out.filter((o) => o.status !== "ok" || o.tokens !== 8);
    assert.deepEqual(failed, [], `every request answered in full (${failed.length} not)`);
    const after = await Promise.all(replicas.map(served));
    const work = after.map((a, i) => a - before[i]);
    assert.equal(work[0] + work[1], 64, `the replicas' metrics count every request (${work})`);
    assert.ok(work[0] > 0 && work[1] > 0, `both replicas served requests (${work})`);
  });

  test("a replica stopped with SIGTERM in the middle of a load loses no request", async () => {
    const [a, b] = replicas;
    let exited: Promise<number | null> | undefined;
    let startedBeforeStop = 0;
    const before = await served(b);
    const out = await load(64, 8, 48, (done, started) => {
      // A quarter of the way in, with requests running on both replicas.
      if (done === 16) { startedBeforeStop = started; exited = a.stop("SIGTERM"); }
    });
    const failed = out.map((o, i) => ({ i, ...o })).filter((o) => o.status !== "ok" || o.tokens !== 48);
    assert.deepEqual(failed, [], `no request lost (${failed.length} failed); haproxy said:\n${lbLog}`);
    assert.ok(exited, "the replica was stopped during the load");
    assert.equal(await exited, 0, `the drained replica exits 0: ${a.stderr()}`);
    assert.match(a.stderr(), /toy: drained/);
    // Every request sent after the stop went to the other replica (the draining one takes no new
    // work); those sent before may have gone to either.
    const tookOver = (await served(b)) - before;
    assert.ok(tookOver >= 64 - startedBeforeStop, `the other replica took over the rest (it served ${tookOver} of the 64; ${startedBeforeStop} were sent before the stop)`);
  });
});
