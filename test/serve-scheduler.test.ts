// The serving loop in process (no HTTP), on a real fixture model: every tick is one forward of
// at most --batch-tokens rows; generating requests get a row each, prompts the rest, first come
// first served; a prompt's last row gives its first token; warm-up leaves the caches empty; a
// drain waits for the running requests and refuses new ones.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { LanguageModel } from "../src/archs/model.js";
import { generate } from "../src/engines/generate.js";
import { loadModel } from "../src/index.js";
import { Scheduler, type Job, type JobResult } from "../src/serve/scheduler.js";
import { fixtures } from "./helpers/fixtures.js";

const fx = fixtures();

const GREEDY = { temperature: 0, topK: 40, topP: 1, minP: 0, repeatPenalty: 1, repeatLastN: 64, seed: 0 };

/** The model, recording the rows of every batched forward (each still computed by the model). */
function recording(model: LanguageModel) {
  const batches: number[][] = [];
  const spy: LanguageModel = Object.create(model);
  spy.forwardBatch = (seqs) => {
    batches.push(seqs.map((s) => s.ids.length));
    return model.forwardBatch(seqs);
  };
  return { spy, batches };
}

function job(prompt: number[], maxTokens: number, tokens: number[] = []): Job {
  return { prompt, maxTokens, sampling: GREEDY, stopIds: new Set(), topLogprobs: undefined, signal: new AbortController().signal, onToken: (id) => { tokens.push(id); } };
}

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
});
