// One process of a training row, toy's side (bench/training.ts runs it; bench/torch_train.py is
// PyTorch's side of the same row):
//   node dist/bench/trainRow.js ROW THREADS GGUF BATCHES WARMUP STEPS
// ROW bench|full: every weight of GGUF trains (toy's warm start, dequantized to float32);
// lora: rank-8 adapters (alpha 16) on attn_q, attn_k, attn_v and attn_output of every layer.
// AdamW with the recipes' defaults. BATCHES: int32, steps × {input, target} × 4 × 256.
// Prints {"tokens_per_s" (median of the timed steps), "steps_tps", "loss0", "warmup_s", "rss_mb"}.

import { readFileSync } from "node:fs";
import { selectBackend } from "../src/backends/index.js";
import { lora } from "../src/recipes/lora.js";
import { warmStart } from "../src/recipes/warmStart.js";

export const TRAIN_BATCH = 4, TRAIN_SEQ = 256, LORA_RANK = 8, LORA_ALPHA = 16;
export const LORA_TARGETS = ["attn_q", "attn_k", "attn_v", "attn_output"];

if (process.argv[1]?.endsWith("trainRow.js")) {
  const [row, threadsArg, model, batchesPath, warmupArg, stepsArg] = process.argv.slice(2);
  const backend = selectBackend("cpu", { threads: Number(threadsArg) });
  const options = { backend, steps: 100 };
  const run = row === "lora"
    ? lora.realize(model, { ...options, rank: LORA_RANK, alpha: LORA_ALPHA, targets: LORA_TARGETS })
    : warmStart.realize(model, options);
  const bytes = readFileSync(batchesPath);
  const all = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const size = TRAIN_BATCH * TRAIN_SEQ;
  const batch = (i: number) => ({
    input: all.slice(2 * i * size, (2 * i + 1) * size), target: all.slice((2 * i + 1) * size, (2 * i + 2) * size),
    batch: TRAIN_BATCH, seq: TRAIN_SEQ,
  });
  const warmup = Number(warmupArg), steps = Number(stepsArg);
  let loss0 = NaN, warmupS = 0;
  const rates: number[] = [];
  for (let i = 0; i < warmup + steps; i++) {
    const t0 = performance.now();
    const r = run.step(batch(i));
    const s = (performance.now() - t0) / 1000;
    if (i === 0) loss0 = r.loss;
    if (i >= warmup) rates.push(size / s); else warmupS += s;
  }
  const median = rates.slice().sort((a, b) => a - b)[(rates.length - 1) >> 1];
  process.stdout.write(JSON.stringify({ tokens_per_s: median, steps_tps: rates, loss0, warmup_s: warmupS, rss_mb: process.resourceUsage().maxRSS / 1024 }) + "\n");
}
