// npm run bench [-- --json] [--reps N] [--threads N] [--only synthetic|smollm2|training] [--no-peers]
//
// Prompt processing (128 tokens) and generation (64 tokens) speed and peak memory of toy's cpu
// backend next to llama.cpp on the same files with the same threads: node-llama-cpp (npm) and
// native llama-bench. Runs are interleaved and repeated; medians are reported. Generation is
// also compared with the memory-bandwidth bound: measured read bandwidth ÷ weight bytes/token.
// The training row (bench/trainRun.ts): tokens/s and FLOP/s of AdamW steps on the cpu backend
// next to the machine's measured float32 matrix-multiply peak.

import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cpuBackend } from "../src/backends/index.js";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { BENCH_TYPES, ensureBenchModel } from "./models.js";
import { ensureLlamaBench, ensureNodeLlamaCpp, llamaBench, runMeasured, type Measurement } from "./peers.js";
import { fixturesDir } from "../test/helpers/fixtures.js";

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const json = flag("--json");
const reps = Number(value("--reps", "3"));
const threads = Number(value("--threads", process.env.TOY_THREADS ?? "2"));
const only = value("--only", "all");
const PP = 128, TG = 64;
const log = (s: string) => process.stderr.write(s + "\n");

const root = fileURLToPath(new URL("../../", import.meta.url));
const benchDir = join(root, ".bench");
const peerDir = join(benchDir, "peer");

const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

/** Bytes of weights read per generated token: every tensor, but only one row of an untied embedding. */
function weightBytesPerToken(path: string): number {
  const h = readGGUFHeader(path);
  const tied = !h.tensors.some((t) => t.name === "output.weight");
  return h.tensors.reduce((s, t) => s + (t.name === "token_embd.weight" && !tied ? t.byteLength / t.dims[1] : t.byteLength), 0);
}

function typeOf(path: string): string {
  const ft = readGGUFHeader(path).metadata.get("general.file_type");
  return ({ 0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 15: "Q4_K_M" } as Record<number, string>)[Number(ft)] ?? `ftype ${ft}`;
}

async function toyRun(model: string): Promise<Measurement | { error: string }> {
  const r = await runMeasured(process.execPath, [join(root, "dist", "bench", "toyRun.js"), model, String(threads), String(PP), String(TG)]);
  if (r.status !== 0) return { error: r.stderr.trim().split("\n").slice(-2).join(" | ") };
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Measurement;
}

async function peerRun(model: string): Promise<Measurement | { error: string }> {
  const r = await runMeasured(process.execPath, [join(root, "dist", "bench", "peerRun.js"), peerDir, model, String(threads), String(PP), String(TG)]);
  if (r.status !== 0) return { error: r.stderr.trim().split("\n").slice(-2).join(" | ") };
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Measurement;
}

/** The training row: its own process per repetition; the run with the median fraction of peak. */
function trainingRow(): Record<string, unknown> | null {
  const runsOf: Record<string, number>[] = [];
  for (let r = 0; r < reps; r++) {
    const p = spawnSync(process.execPath, [fileURLToPath(new URL("./trainRun.js", import.meta.url)), String(threads)], { encoding: "utf8" });
    if (p.status !== 0) { log(`training run failed: ${p.stderr.trim().split("\n").at(-1)}`); continue; }
    runsOf.push(JSON.parse(p.stdout.trim().split("\n").at(-1)!));
    const last = runsOf.at(-1)!;
    log(`rep ${r + 1}/${reps} training: ${fmt(last.tokens_per_s)} tokens/s, ${fmt(last.flops / 1e9)} GFLOP/s; GEMM ${fmt(last.sustained_flops / 1e9)} sustained, ` +
      `${fmt(last.peak_flops / 1e9)} best; fraction ${fmt(last.fraction, 2)} (steps: ${(last.fractions as unknown as number[]).map((f) => fmt(f, 2)).join(" ")}), of best ${fmt(last.fraction_of_best, 2)}, per CPU second ${fmt(last.fraction_cpu, 2)}`);
  }
  if (!runsOf.length) return null;
  const mid = runsOf.sort((a, b) => a.fraction - b.fraction)[(runsOf.length - 1) >> 1];
  return { bench: "training", backend: "cpu", threads, ...mid };
}

function printTraining(row: Record<string, unknown>): void {
  const g = (x: unknown) => fmt((x as number) / 1e9);
  process.stdout.write(`\ntraining (cpu, ${threads} threads): ${row.model}, ${(row.params as number / 1e6).toFixed(1)}M parameters\n` +
    `| tokens/s | GFLOP/s (6·P·tokens/s) | matmul GFLOP/s sustained / best | fraction of peak: sustained / best / per CPU second |\n| --- | --- | --- | --- |\n` +
    `| ${fmt(row.tokens_per_s as number)} | ${g(row.flops)} | ${g(row.sustained_flops)} / ${g(row.peak_flops)} | ` +
    `${fmt(row.fraction as number, 2)} / ${fmt(row.fraction_of_best as number, 2)} / ${fmt(row.fraction_cpu as number, 2)} |\n` +
    `(medians over the steps of the median run; each step against the GEMM run just before it for as long — bench/trainRun.ts)\n`);
}

async function main(): Promise<void> {
  const cpu = cpuBackend();
  if ("error" in cpu) throw new Error(`the cpu backend is not built: ${cpu.error}`);
  if (only === "training") {
    const row = trainingRow();
    if (row) { if (json) process.stdout.write(JSON.stringify(row) + "\n"); else printTraining(row); }
    return;
  }
  const models: { name: string; path: string }[] = [];
  if (only !== "smollm2") for (const t of BENCH_TYPES) models.push({ name: "smollm2-shape (random)", path: ensureBenchModel(join(benchDir, "models"), t, log) });
  const fx = fixturesDir();
  if (only !== "synthetic" && fx) models.push({ name: "SmolLM2-135M-Instruct", path: join(fx, "models", "SmolLM2-135M-Instruct.Q4_1.gguf") });

  const peers = flag("--no-peers") ? [] : ["node-llama-cpp", "llama-bench"];
  const nlc = peers.length ? ensureNodeLlamaCpp(peerDir, log) : { error: "--no-peers" };
  const lb = peers.length && typeof nlc === "string" ? ensureLlamaBench(benchDir, peerDir, log) : { error: typeof nlc === "string" ? "--no-peers" : nlc.error };
  if (typeof nlc !== "string") log(`node-llama-cpp unavailable: ${nlc.error}`);
  if (typeof lb !== "string") log(`llama-bench unavailable: ${lb.error}`);

  const bandwidth = cpu.addon.readBandwidth(threads); // bytes/s
  log(`threads ${threads}, ${reps} repetitions, read bandwidth ${(bandwidth / 1e9).toFixed(1)} GB/s`);

  type Runs = { toy: Measurement[]; nlc: Measurement[]; lb: Measurement[] };
  const runs = new Map<string, Runs>(models.map((m) => [m.path, { toy: [], nlc: [], lb: [] }]));
  for (let rep = 0; rep < reps; rep++) {
    for (const m of models) {
      const r = runs.get(m.path)!;
      const t = await toyRun(m.path);
      if ("error" in t) log(`toy failed on ${m.path}: ${t.error}`); else r.toy.push(t);
      if (typeof nlc === "string") {
        const p = await peerRun(m.path);
        if ("error" in p) log(`node-llama-cpp failed on ${m.path}: ${p.error}`); else r.nlc.push(p);
      }
      if (typeof lb === "string") {
        const p = await llamaBench(lb, m.path, threads, PP, TG, 1);
        if ("error" in p) log(`llama-bench failed on ${m.path}: ${p.error}`); else r.lb.push(p);
      }
      log(`rep ${rep + 1}/${reps} ${m.path.split("/").at(-1)}: toy ${fmt(r.toy.at(-1)?.pp_tps)}/${fmt(r.toy.at(-1)?.tg_tps)} t/s, node-llama-cpp ${fmt(r.nlc.at(-1)?.pp_tps)}/${fmt(r.nlc.at(-1)?.tg_tps)}, llama-bench ${fmt(r.lb.at(-1)?.pp_tps)}/${fmt(r.lb.at(-1)?.tg_tps)}`);
    }
  }

  const rows: Record<string, unknown>[] = [];
  for (const m of models) {
    const r = runs.get(m.path)!;
    const type = typeOf(m.path);
    const bound = bandwidth / weightBytesPerToken(m.path);
    for (const [peer, list] of [["node-llama-cpp", r.nlc], ["llama-bench", r.lb]] as const) {
      if (!peers.includes(peer) && peers.length) continue;
      for (const phase of ["prompt", "generation"] as const) {
        const key = phase === "prompt" ? "pp_tps" : "tg_tps";
        const toyTps = median(r.toy.map((x) => x[key])), peerTps = median(list.map((x) => x[key]));
        rows.push({
          model: m.name, type, phase, peer, toy_tps: toyTps, peer_tps: peerTps, ratio: toyTps / peerTps,
          bound_tps: phase === "generation" ? bound : null,
          toy_rss_mb: median(r.toy.map((x) => x.rss_mb)), peer_rss_mb: median(list.map((x) => x.rss_mb)),
          file_mb: readGGUFHeader(m.path).tensors.reduce((s, t) => s + t.byteLength, 0) / 2 ** 20,
        });
      }
    }
  }
  const training = only === "all" ? trainingRow() : null;
  if (json) {
    for (const row of rows) process.stdout.write(JSON.stringify(row) + "\n");
    if (training) process.stdout.write(JSON.stringify(training) + "\n");
    return;
  }
  const head = ["model", "type", "phase", "peer", "toy t/s", "peer t/s", "ratio", "bound t/s", "toy/bound", "toy RSS MB", "peer RSS MB"];
  const table = rows.map((r) => [
    String(r.model), String(r.type), String(r.phase), String(r.peer), fmt(r.toy_tps as number), fmt(r.peer_tps as number),
    fmt(r.ratio as number, 2), r.bound_tps === null ? "" : fmt(r.bound_tps as number), r.bound_tps === null ? "" : fmt((r.toy_tps as number) / (r.bound_tps as number), 2),
    fmt(r.toy_rss_mb as number), fmt(r.peer_rss_mb as number),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const line = (cells: string[]) => "| " + cells.map((c, i) => c.padEnd(widths[i])).join(" | ") + " |";
  process.stdout.write([line(head), line(widths.map((w) => "-".repeat(w))), ...table.map(line)].join("\n") + "\n");
  process.stdout.write(`\nthreads ${threads}; medians of ${reps} interleaved runs; read bandwidth ${(bandwidth / 1e9).toFixed(1)} GB/s\n`);
  if (training) printTraining(training);
}

function fmt(x: number | undefined, digits = 1): string {
  return x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits);
}

await main();
