// The benchmark's training rows: toy (bench/trainRow.ts) against PyTorch on the CPU, eager and
// torch.compile (bench/torch_train.py), the same model read from the same GGUF, the same batches,
// the same optimizer, each run in its own process, interleaved, medians of the repetitions.
// Rows: "bench" (llama d 512, 4 layers, FFN 1536, byte vocabulary, from toy's from-scratch
// initialization), "full" (every weight of SmolLM2-135M) and "lora" (rank 8 on q/k/v/o of
// SmolLM2-135M); batch 4 × 256.
// PyTorch lives in a virtual environment the benchmark makes (.bench/torch, `pip install torch
// gguf numpy` from PyPI); $TOY_TORCH_PYTHON names another interpreter that has them.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { Rng } from "../src/data/rng.js";
import { initialModelBytes, scratchConfig } from "../src/recipes/fromScratch.js";
import { SMOL_FIXTURE } from "./models.js";
import { runMeasured } from "./peers.js";
import { median } from "./stats.js";
import { TRAIN_BATCH, TRAIN_SEQ } from "./trainRow.js";

export const TRAINING_ROWS = ["bench", "full", "lora"];
const WARMUP = 2;
const BENCH_SHAPE = { nEmbd: 512, nLayer: 4, nHead: 8, nKVHead: 8, nFF: 1536, contextLength: 256 };

export interface TrainingOptions {
  root: string;
  benchDir: string;
  rows: string[];
  threads: number[];
  reps: number;
  steps: number;
  /** PyTorch peers: "eager", "compile". */
  torch: string[];
  fixtures: string | null;
  log: (s: string) => void;
}

interface Run { tokens_per_s: number; steps_tps: number[]; loss0: number; warmup_s: number; rss_mb: number }

/** The venv's python with torch, gguf and numpy, made on first use; or why not. */
export function ensureTorch(benchDir: string, log: (s: string) => void): string | { error: string } {
  const python = process.env.TOY_TORCH_PYTHON ?? join(benchDir, "torch", "bin", "python");
  const works = () => spawnSync(python, ["-c", "import torch, gguf, numpy"], { encoding: "utf8" }).status === 0;
  if (existsSync(python) && works()) return python;
  if (process.env.TOY_TORCH_PYTHON) return { error: `${python} cannot import torch, gguf and numpy` };
  const venv = join(benchDir, "torch");
  log(`making ${venv}: python3 -m venv, then pip install torch gguf numpy (PyPI; ~5 GB with the CUDA wheels torch pulls in) ...`);
  mkdirSync(benchDir, { recursive: true });
  if (!existsSync(python) && spawnSync("python3", ["-m", "venv", venv], { stdio: "inherit" }).status !== 0) return { error: "python3 -m venv failed" };
  const pip = spawnSync(join(venv, "bin", "pip"), ["install", "--disable-pip-version-check", "torch", "gguf", "numpy"], { stdio: ["ignore", "ignore", "inherit"] });
  if (pip.status !== 0) return { error: `pip install torch gguf numpy failed (exit ${pip.status})` };
  return works() ? python : { error: `${python} still cannot import torch, gguf and numpy` };
}

/** The GGUF a row trains, and the batches file both sides read (made once in .bench/train). */
function rowInputs(o: TrainingOptions, row: string): { model: string; batches: string } | { error: string } {
  const dir = join(o.benchDir, "train");
  mkdirSync(dir, { recursive: true });
  let model: string, nVocab: number;
  if (row === "bench") {
    model = join(dir, "bench-shape.gguf");
    // fromScratch's initialization with its default seed (0), written out so PyTorch reads the same weights.
    if (!existsSync(model)) writeFileSync(model, initialModelBytes(scratchConfig(BENCH_SHAPE), 0, true, 0.02, "toy-bench-shape"));
    nVocab = 259; // the byte vocabulary: 3 specials + 256 bytes
  } else {
    if (!o.fixtures) return { error: "the fixtures (../shared/fixtures) are absent" };
    model = join(o.fixtures, "models", SMOL_FIXTURE);
    if (!existsSync(model)) return { error: `${model} not found` };
    nVocab = readGGUFHeader(model).tensors.find((t) => t.name === "token_embd.weight")!.dims[1];
  }
  const n = WARMUP + o.steps;
  const batches = join(dir, `batches-${row}-${n}.i32`);
  if (!existsSync(batches)) {
    const rng = new Rng(1), lo = row === "bench" ? 3 : 0;
    const ids = Int32Array.from({ length: n * 2 * TRAIN_BATCH * TRAIN_SEQ }, () => lo + Math.floor(rng.next() * (nVocab - lo)));
    writeFileSync(batches, new Uint8Array(ids.buffer));
  }
  return { model, batches };
}

export interface TrainingRow {
  kind: "training"; row: string; threads: number;
  toy_tps: number; eager_tps: number; compile_tps: number; ratio_eager: number; ratio_compile: number;
  loss0: Record<string, number>; runs: Record<string, number[]>; rss_mb: Record<string, number>; warmup_s: Record<string, number>; errors: string[];
}

export async function trainingRows(o: TrainingOptions): Promise<TrainingRow[]> {
  const python = o.torch.length ? ensureTorch(o.benchDir, o.log) : { error: "--torch none" };
  if (typeof python !== "string") o.log(`PyTorch unavailable: ${python.error}`);
  const peers = ["toy", ...(typeof python === "string" ? o.torch.filter((m) => m === "eager" || m === "compile") : [])];
  const inputs = new Map<string, { model: string; batches: string }>();
  for (const row of o.rows) {
    const got = TRAINING_ROWS.includes(row) ? rowInputs(o, row) : { error: `unknown training row (expected ${TRAINING_ROWS.join(", ")})` };
    if ("error" in got) o.log(`skipping training row ${row}: ${got.error}`); else inputs.set(row, got);
  }
  const runs = new Map<string, Record<string, Run[]>>(), errors = new Map<string, string[]>();
  const key = (row: string, threads: number) => `${row}/${threads}`;
  const total = o.reps * o.threads.length * inputs.size * peers.length;
  let done = 0;
  const start = performance.now();
  for (let rep = 0; rep < o.reps; rep++) for (const threads of o.threads) for (const [row, { model, batches }] of inputs) {
    const k = key(row, threads);
    if (!runs.has(k)) { runs.set(k, Object.fromEntries(peers.map((p) => [p, []]))); errors.set(k, []); }
    for (const peer of peers) {
      const r = peer === "toy"
        ? await runMeasured(process.execPath, [join(o.root, "dist", "bench", "trainRow.js"), row, String(threads), model, batches, String(WARMUP), String(o.steps)])
        : await runMeasured(python as string, [join(o.root, "bench", "torch_train.py"), "--row", row, "--mode", peer, "--threads", String(threads),
          "--model", model, "--batches", batches, "--warmup", String(WARMUP), "--steps", String(o.steps), "--batch", String(TRAIN_BATCH), "--seq", String(TRAIN_SEQ)],
        { ...process.env, OMP_NUM_THREADS: String(threads) });
      done++;
      const elapsed = (performance.now() - start) / 1000;
      if (r.status !== 0) {
        errors.get(k)!.push(`${peer}: ${r.stderr.trim().split("\n").filter(Boolean).slice(-2).join(" | ")}`);
        o.log(`[${done}/${total}] training ${row} ${threads}t ${peer}: failed: ${errors.get(k)!.at(-1)}`);
        continue;
      }
      const run = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Run;
      run.rss_mb = Math.max(run.rss_mb, r.peakRssMb);
      runs.get(k)![peer].push(run);
      o.log(`[${done}/${total}] rep ${rep + 1} training ${row} ${threads}t ${peer}: ${run.tokens_per_s.toFixed(1)} tokens/s ` +
        `(steps ${run.steps_tps.map((x) => x.toFixed(0)).join(" ")}; first loss ${run.loss0.toFixed(4)}; warm-up ${run.warmup_s.toFixed(1)} s) ` +
        `(${Math.round(elapsed / 60)} min, ~${Math.round((elapsed / done) * (total - done) / 60)} min left)`);
    }
  }
  const rows: TrainingRow[] = [];
  for (const threads of o.threads) for (const row of inputs.keys()) {
    const r = runs.get(key(row, threads));
    if (!r) continue;
    const tps = (p: string) => median((r[p] ?? []).map((x) => x.tokens_per_s));
    const per = (f: (x: Run[]) => number) => Object.fromEntries(peers.map((p) => [p, f(r[p])]));
    rows.push({
      kind: "training", row, threads, toy_tps: tps("toy"), eager_tps: tps("eager"), compile_tps: tps("compile"),
      ratio_eager: tps("toy") / tps("eager"), ratio_compile: tps("toy") / tps("compile"),
      loss0: per((x) => x[0]?.loss0 ?? NaN), runs: Object.fromEntries(peers.map((p) => [p, r[p].map((x) => x.tokens_per_s)])),
      rss_mb: per((x) => median(x.map((y) => y.rss_mb))), warmup_s: per((x) => median(x.map((y) => y.warmup_s))), errors: errors.get(key(row, threads))!,
    });
  }
  return rows;
}

const ROW_NAMES: Record<string, string> = {
  bench: "bench shape (d 512, 4 layers, FFN 1536, bytes)",
  full: "SmolLM2-135M full fine-tune",
  lora: "SmolLM2-135M LoRA r8 q/k/v/o",
};

export function printTraining(rows: TrainingRow[], threadCounts: number[]): void {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  for (const threads of threadCounts) {
    const mine = rows.filter((r) => r.threads === threads);
    if (!mine.length) continue;
    process.stdout.write(`\n### Training, ${threads} thread${threads > 1 ? "s" : ""} (tokens/s, batch ${TRAIN_BATCH}×${TRAIN_SEQ}, AdamW)\n\n` +
      "| row | toy | PyTorch eager | toy/eager | torch.compile | toy/compile | first loss toy / eager / compile | RSS MB toy / eager / compile |\n" +
      "|---|---|---|---|---|---|---|---|\n" +
      mine.map((r) => `| ${ROW_NAMES[r.row]} | ${f(r.toy_tps)} | ${f(r.eager_tps)} | ${f(r.ratio_eager, 2)} | ${f(r.compile_tps)} | ${f(r.ratio_compile, 2)} | ` +
        `${f(r.loss0.toy, 4)} / ${f(r.loss0.eager, 4)} / ${f(r.loss0.compile, 4)} | ${f(r.rss_mb.toy, 0)} / ${f(r.rss_mb.eager, 0)} / ${f(r.rss_mb.compile, 0)} |`).join("\n") + "\n");
    for (const r of mine) if (r.errors.length) process.stdout.write(`${r.row} ${threads}t: ${r.errors.length} failed runs, e.g. ${r.errors[0]}\n`);
  }
}
