// The serving loop in process (no HTTP), on a real fixture model: every tick is one forward of
// at most --batch-tokens rows; generating requests get a row each, prompts the rest, first come
// first served; a prompt's last row gives its first token; warm-up leaves the caches empty; a
// drain waits for the running requests and refuses new ones; a prompt another slot holds is copied
// from its cache, not read again, and gives the answer it gets alone.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { LanguageModel } from "../src/archs/model.js";
import { cpuBackend } from "../src/backends/index.js";
import type { Device } from "../src/backends/kernels.js";
import type { KVCache } from "../src/blocks/kvCache.js";
import { generate } from "../src/engines/generate.js";
import { loadModel } from "../src/index.js";
import { Scheduler, type Job, type JobResult } from "../src/serve/scheduler.js";
import type { TokenLogprob } from "../src/serve/textStream.js";
import { fixtures } from "./helpers/fixtures.js";

const fx = fixtures();

const GREEDY = { temperature: 0, topK: 40, topP: 1, minP: 0, repeatPenalty: 1, repeatLastN: 64, seed: 0 };

/** Sampled, with a repetition penalty: an answer that a changed logit anywhere would show. */
const SAMPLED = { ...GREEDY, temperature: 0.9, topP: 0.95, repeatPenalty: 1.1, seed: 7 };

/** The model, recording the rows of every batched forward (each still computed by the model), and each cache's rows in all. */
function recording(model: LanguageModel) {
  const batches: number[][] = [];
  const rowsOf = new Map<KVCache, number>();
  const spy: LanguageModel = Object.create(model);
  spy.forwardBatch = (seqs) => {
    batches.push(seqs.map((s) => s.ids.length));
    for (const s of seqs) rowsOf.set(s.cache, (rowsOf.get(s.cache) ?? 0) + s.ids.length);
    return model.forwardBatch(seqs);
  };
  return { spy, batches, rowsOf };
}

function job(prompt: number[], maxTokens: number, tokens: number[] = [], sampling = GREEDY, logprobs?: TokenLogprob[]): Job {
  return {
    prompt, maxTokens, sampling, stopIds: new Set(), topLogprobs: logprobs ? 3 : undefined, signal: new AbortController().signal,
    onToken: (id, lp) => { tokens.push(id); if (lp) logprobs!.push(lp); },
  };
}

/** A request's tokens and log-probabilities (top 3) in an empty server of one slot. */
async function alone(model: LanguageModel, prompt: number[], maxTokens: number) {
  const tokens: number[] = [], logprobs: TokenLogprob[] = [];
  await new Scheduler(model, { parallel: 1, queueSize: 1, contextSize: 256 }).submit(job(prompt, maxTokens, tokens, SAMPLED, logprobs));
  return { tokens, logprobs };
}

const promptOf = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 1 + ((i * 97 + seed * 31) % 500));

describe("Scheduler", { skip: fx.skip }, () => {
  // The ts backend: every row is computed on its own, so batched answers equal solo ones exactly.
  const model = () => loadModel(join(fx.dir, "models", "stories260K.gguf"), "ts");

  test("ticks hold at most batchTokens rows: a token per generating request, prompts first come first served", async () => {
    const m = model();
    const { spy, batches } = recording(m);
    const s = new Scheduler(spy, { parallel: 4, queueSize: 4, contextSize: 256, batchTokens: 16 });
    const prompts = [Array.from({ length: 40 }, (_, i) => 5 + i), [1, 9, 8, 7, 6], [1, 30, 31], [1, 50, 51, 52, 53, 54, 55]];
    const streams = prompts.map(() => [] as number[]);
    const results: JobResult[] = await Promise.all(prompts.map((p, i) => s.submit(job(p, 6, streams[i]))));
    for (const b of batches) assert.ok(b.reduce((x, y) => x + y, 0) <= 16, `a tick of ${b} rows`);
    const rows = batches.flat().reduce((x, y) => x + y, 0);
    // The last prompt starts with the token `1` that a slot read in an earlier tick: it copies it.
    assert.deepEqual(results.map((r) => r.sharedTokens), [0, 0, 0, 1]);
    assert.equal(rows, prompts.reduce((n, p) => n + p.length, 0) - 1 + 4 * 5, "every prompt row once (less the copied one), and 5 decode rows each (the 6th token is not fed back)");
    // The 40-token prompt came first: it fills the first ticks alone, chunked by the budget.
    assert.deepEqual(batches[0], [16]);
    assert.deepEqual(batches[1], [16]);
    assert.deepEqual(batches[2], [8, 5, 3], "its last 8 rows, then the next prompts in order, within the budget");
    // Each answer is the one it gets alone.
    for (const [i, p] of prompts.entries()) {
      const solo = generate(m, p, { maxTokens: 6, sampling: GREEDY });
      assert.deepEqual(results[i].tokens, solo.tokens, `request ${i}`);
      assert.deepEqual(streams[i], solo.tokens);
      assert.equal(results[i].finishReason, "length");
    }
  });

  test("warm-up runs the model and leaves every slot's cache empty", async () => {
    const { spy, batches } = recording(model());
    const s = new Scheduler(spy, { parallel: 3, queueSize: 1, contextSize: 64 });
    await s.warmUp(1);
    assert.deepEqual(batches, [[1, 1, 1]]);
    assert.deepEqual(s.cacheUse(), { busy: 0, kept: 0, capacity: 192 });
  });

  test("drain: new jobs get 503, running ones finish, then it resolves", async () => {
    const s = new Scheduler(model(), { parallel: 1, queueSize: 2, contextSize: 128 });
    const running = s.submit(job([1, 2, 3], 20));
    const queued = s.submit(job([1, 4, 5], 5));
    let drained = false;
    const drain = s.drain().then(() => { drained = true; });
    assert.throws(() => s.submit(job([1, 2], 1)), (e: { status?: number }) => e.status === 503);
    const [a, b] = await Promise.all([running, queued]);
    await drain;
    assert.ok(drained);
    assert.equal(a.tokens.length, 20);
    assert.equal(b.tokens.length, 5, "a queued request was accepted: it runs too");
  });

  test("requests arriving over several turns of the event loop start in the same tick; endless arrivals do not stall it", async () => {
    const m = model();
    const { spy, batches } = recording(m);
    // As the server counts them: a request taken in since the scheduler last asked.
    let arrivals = 0, seen = 0;
    const arriving = () => { const changed = arrivals !== seen; seen = arrivals; return changed; };
    const s = new Scheduler(spy, { parallel: 4, queueSize: 4, contextSize: 256, batchTokens: 64, arriving });
    const prompts = [[1, 9, 8, 7, 6], [1, 30, 31], [1, 50, 51, 52]];
    const turn = () => new Promise<void>((r) => setImmediate(r));
    const submitted: Promise<JobResult>[] = [];
    for (const p of prompts) {
      arrivals++;
      submitted.push(s.submit(job(p, 3)));
      await turn(); // the next request comes one turn of the event loop later
    }
    await Promise.all(submitted);
    assert.deepEqual(batches[0], [5, 3, 4], "all three prompts in the first tick");

    // A server that keeps taking in connections: each tick still runs, after a bounded wait.
    const flood = new Scheduler(m, { parallel: 2, queueSize: 2, contextSize: 256, arriving: () => true });
    const r = await flood.submit(job([1, 9, 8], 4));
    assert.equal(r.tokens.length, 4);
  });

  const devices: Device[] = ["ts", ...("error" in cpuBackend() ? [] : ["cpu" as const])];
  for (const device of devices) {
    test(`a prompt another slot holds, busy or idle, is copied and not read again; the answer is the one it gets alone (${device})`, async () => {
      const m = loadModel(join(fx.dir, "models", "stories260K.gguf"), device);
      const { spy, rowsOf } = recording(m);
      const s = new Scheduler(spy, { parallel: 3, queueSize: 3, contextSize: 256 });
      const P = promptOf(30, 1);
      const extended = [...P, ...promptOf(6, 2)];
      const runs = [0, 1, 2].map(() => ({ tokens: [] as number[], logprobs: [] as TokenLogprob[] }));
      // B (P and 6 more tokens) arrives while A (P) is generating; C (P again) after A ended.
      let b: Promise<JobResult> | undefined;
      const a = job(P, 30, runs[0].tokens, SAMPLED, runs[0].logprobs);
      const onToken = a.onToken;
      a.onToken = (id, lp) => {
        onToken(id, lp);
        if (runs[0].tokens.length === 3) b = s.submit(job(extended, 20, runs[1].tokens, SAMPLED, runs[1].logprobs));
      };
      const ra = await s.submit(a);
      const c = s.submit(job(P, 20, runs[2].tokens, SAMPLED, runs[2].logprobs));
      const [rb, rc] = await Promise.all([b!, c]);
      const [cacheA, cacheB, cacheC] = [...rowsOf.keys()];
      assert.equal(rowsOf.get(cacheA), 30 + 29, "A: its prompt, then a row per token but the last");
      assert.equal(rowsOf.get(cacheB), 6 + 19, "B: only its 6 new prompt tokens (A's slot lent the 30 before them)");
      assert.equal(rowsOf.get(cacheC), 1 + 19, "C: only the last prompt token (A's idle slot lent the rest, and kept its answer)");
      assert.deepEqual([ra, rb, rc].map((r) => [r.cachedTokens, r.sharedTokens]), [[0, 0], [30, 30], [29, 29]]);
      for (const [i, [prompt, n]] of ([[P, 30], [extended, 20], [P, 20]] as const).entries()) {
        assert.deepEqual(runs[i], await alone(m, [...prompt], n), `request ${"ABC"[i]}: tokens and log-probabilities as alone`);
      }
    });
  }

  test("a slot that holds exactly the prompt (its request read it and ended) lends it whole with its logits: nothing is read", async () => {
    const m = model();
    const { spy, rowsOf } = recording(m);
    const s = new Scheduler(spy, { parallel: 2, queueSize: 2, contextSize: 256 });
    const P = promptOf(25, 4);
    await s.submit(job(P, 1)); // one token: it is never fed back, the slot holds P
    const run = { tokens: [] as number[], logprobs: [] as TokenLogprob[] };
    const r = await s.submit(job(P, 12, run.tokens, SAMPLED, run.logprobs));
    const [, second] = [...rowsOf.entries()];
    assert.equal(second[1], 11, "only decode rows: a row per token but the last");
    assert.deepEqual([r.cachedTokens, r.sharedTokens], [25, 25]);
    assert.deepEqual(run, await alone(m, P, 12));
  });

  test("16 requests with one prompt no slot holds: one reads it, the others copy it and its logits a tick later and read nothing", async () => {
    const m = model();
    const { spy, batches } = recording(m);
    const s = new Scheduler(spy, { parallel: 16, queueSize: 16, contextSize: 256, batchTokens: 64 });
    const P = promptOf(20, 3);
    const runs = Array.from({ length: 16 }, () => ({ tokens: [] as number[], logprobs: [] as TokenLogprob[] }));
    const results = await Promise.all(runs.map((r) => s.submit(job(P, 5, r.tokens, SAMPLED, r.logprobs))));
    assert.deepEqual(batches[0], [20], "the first request reads the prompt; the others wait for it");
    assert.deepEqual(batches[1], Array(16).fill(1), "then all 16 generate: a decode row each");
    assert.deepEqual(results.map((r) => r.sharedTokens), [0, ...Array(15).fill(20)]);
    assert.equal(batches.flat().reduce((x, y) => x + y, 0), 20 + 16 * 4, "the prompt once, and 4 decode rows each");
    const solo = await alone(m, P, 5);
    for (const [i, r] of runs.entries()) assert.deepEqual(r, solo, `request ${i}`);
  });

  test("a token's writes (Node's HTTP responses flush them on process.nextTick) run before the forward that follows it", async () => {
    const m = model();
    const emitted: number[] = [], flushed: number[] = [];
    let checked = 0;
    const spy: LanguageModel = Object.create(m);
    spy.forwardBatch = (seqs) => {
      assert.deepEqual(flushed, emitted, "every token emitted so far has left");
      checked++;
      return m.forwardBatch(seqs);
    };
    const s = new Scheduler(spy, { parallel: 2, queueSize: 2, contextSize: 64 });
    const j = (prompt: number[]): Job => ({
      ...job(prompt, 6),
      onToken: (id) => { emitted.push(id); process.nextTick(() => flushed.push(id)); },
    });
    await Promise.all([s.submit(j([1, 9, 8])), s.submit(j([1, 30, 31, 32]))]);
    assert.equal(emitted.length, 12);
    assert.ok(checked >= 6);
  });
});
