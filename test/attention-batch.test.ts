// Batched attention (one kernel call for the rows of several sequences, each over its own
// cache, as a server's tick runs them) must give every row exactly the bits that attention of
// that sequence alone gives it: batch invariance depends on it.

import { test } from "node:test";
import assert from "node:assert/strict";
import { loadCpuBackend, type CpuBackend } from "../src/backends/cpu/index.js";
import { f32Rows, randn } from "../src/backends/cpu/selftest.js";
import type { AttentionOptions, AttentionSegment, KVRows, KVType } from "../src/backends/kernels.js";
import { tsKernels } from "../src/backends/ts/index.js";
import { GGMLType } from "../src/io/gguf/types.js";
import { quantize } from "../src/quant/index.js";
import { attentionSegments } from "../src/primitives/index.js";
import { Tensor } from "../src/tensor/tensor.js";

const loaded = loadCpuBackend();
const skip = "error" in loaded ? `cpu backend unavailable: ${loaded.error}` : false;
if (skip) console.warn(`# SKIP attention-batch cpu tests: ${skip}`);
const cpu = loaded as CpuBackend;

const nH = 9, nKV = 3, hd = 64, width = nH * hd;
const ggml: Record<KVType, number> = { f32: GGMLType.F32, f16: GGMLType.F16, q8_0: GGMLType.Q8_0 };

/** Sequences as a server batches them: decode rows over short and long caches, and prompt chunks. */
const shapes = [
  { rows: 1, nKeys: 50 }, { rows: 1, nKeys: 1000 }, { rows: 20, nKeys: 300 }, { rows: 1, nKeys: 129 },
  { rows: 3, nKeys: 3 }, { rows: 1, nKeys: 700 }, { rows: 16, nKeys: 16 }, { rows: 1, nKeys: 1 },
];

function caches(type: KVType): { k: KVRows; v: KVRows }[] {
  return shapes.map(({ nKeys }, s) => {
    const rows = (x: Float32Array): KVRows => type === "f32" ? f32Rows(x) : { type, bytes: quantize(ggml[type], x, nKeys, nKV * hd) };
    return { k: rows(randn(nKeys * nKV * hd, 100 + s)), v: rows(randn(nKeys * nKV * hd, 200 + s)) };
  });
}

function segmentsOf(kv: { k: KVRows; v: KVRows }[], order: number[]): AttentionSegment[] {
  let start = 0;
  return order.map((s) => {
    const { rows, nKeys } = shapes[s];
    const seg = { ...kv[s], start, length: rows, pos0: nKeys - rows, nKeys };
    start += rows;
    return seg;
  });
}

const optionSets: AttentionOptions[] = [
  { scale: 0.125, softcap: 0, window: 0, causal: true },
  { scale: 0.125, softcap: 30, window: 200, causal: true },
];

test("attentionBatch: every row gets the bits of its sequence's attention alone, every cache type, 1 and 2 threads, any order", { skip }, () => {
  const rowsTotal = shapes.reduce((n, s) => n + s.rows, 0);
  const q = randn(rowsTotal * width, 7);
  for (const type of ["f32", "f16", "q8_0"] as const) {
    const kv = caches(type);
    for (const opts of optionSets) {
      // All of them (rows enough to keep every thread busy: whole rows), reversed, and a few
      // decode rows over long caches (then the kernel also splits rows over key positions).
      for (const order of [shapes.map((_, i) => i), shapes.map((_, i) => shapes.length - 1 - i), [1, 5, 3]]) {
        const segs = segmentsOf(kv, order);
        for (const threads of [1, 2]) {
          cpu.setThreads(threads);
          const batched = new Float32Array(rowsTotal * width);
          cpu.kernels.attentionBatch!(q, segs, nH, nKV, hd, opts, batched);
          for (const s of segs) {
            const alone = new Float32Array(s.length * width);
            cpu.kernels.attention(q.slice(s.start * width, (s.start + s.length) * width), s.k, s.v, s.length, s.pos0, s.nKeys, nH, nKV, hd, opts, alone);
            assert.deepEqual(batched.slice(s.start * width, (s.start + s.length) * width), alone,
              `${type}, window ${opts.window}, ${threads} threads: ${s.length} rows over ${s.nKeys} keys`);
          }
        }
      }
    }
  }
  cpu.setThreads(2);
});

test("attentionSegments: the ts backend (one call per sequence) agrees with the batched cpu kernel", { skip }, () => {
  const kv = caches("f16");
  const segs = segmentsOf(kv, shapes.map((_, i) => i));
  const rowsTotal = shapes.reduce((n, s) => n + s.rows, 0);
  const data = randn(rowsTotal * width, 8);
  const ts = attentionSegments(new Tensor([rowsTotal, nH, hd], data, "ts"), segs, nKV, optionSets[1]);
  const native = attentionSegments(new Tensor([rowsTotal, nH, hd], data, "cpu"), segs, nKV, optionSets[1]);
  let worst = 0;
  for (let i = 0; i < ts.size; i++) worst = Math.max(worst, Math.abs(ts.data[i] - native.data[i]));
  assert.ok(worst < 1e-4, `max difference ${worst}`); // float32 sums in another order (cpu-backend.test.ts: 1e-5 relative)
  // The ts path is one attention call per sequence: the same values as calling it directly.
  const s = segs[2], alone = new Float32Array(s.length * width);
  tsKernels.attention(data.slice(s.start * width, (s.start + s.length) * width), s.k, s.v, s.length, s.pos0, s.nKeys, nH, nKV, hd, optionSets[1], alone);
  assert.deepEqual(ts.data.slice(s.start * width, (s.start + s.length) * width), alone);
});

test("attentionBatch: bad arguments throw instead of crashing", { skip }, () => {
  const k = new Uint8Array(10 * nKV * hd * 2), q = new Float32Array(2 * width), out = new Float32Array(2 * width);
  const call = (segs: number[], keys: Uint8Array[], values = keys) =>
    cpu.addon.attentionBatch(q, 1, Int32Array.from(segs), keys, values, nH, nKV, hd, 0.125, 0, 0, 1, out);
  call([0, 1, 9, 10, 1, 1, 9, 10], [k, k]); // fits
  call([], []); // no sequences: nothing to do
  assert.throws(() => call([0, 1, 9, 11], [k]), /does not fit/); // more keys than the cache holds
  assert.throws(() => call([1, 2, 8, 10], [k]), /does not fit/); // rows past q
  assert.throws(() => call([0, 1, 9, 10, 1, 1, 9, 10], [k]), /arrays of 2 caches/);
  assert.throws(() => call([0, 1, 9], [k]), /segs must hold/);
});
