// npm run bench [-- --json] [--quick] [--models F32,Q4_1,…] [--tests pp128,tg64@4096] [--threads 1,2]
//                  [--reps 3] [--repetitions 5] [--peers llama.cpp,node-llama-cpp] [--cache-type f16]
//                  [--only inference|training]
//                  [--backend cpu|webgpu] [--files a.gguf,b.gguf]
//
// toy's cpu backend next to llama.cpp on the same GGUF files with the same threads, test by test
// (bench/tests.ts: ppN, tgN@D), each run in its own process, toy and the peers interleaved run by
// run, medians of --reps; a run is llama-bench's: a warm-up, then --repetitions timed runs of the
// test (llama-bench's -r and its default, 5), their mean t/s; toy's first timed run is also shown
// on its own (V8 is still compiling toy's forward then); peak resident memory of every process; the memory-bandwidth bound of
// decode (bench/bounds.ts). Then the training rows against PyTorch (bench/training.ts).
// --backend webgpu measures toy's webgpu backend instead, next to llama.cpp built with its own
// GPU backend (CUDA where nvcc is found, else Vulkan; bench/peers.ts) with every layer offloaded
// (-ngl 99); the threads are then llama.cpp's host threads, and there is no bandwidth bound (the
// GPU's is not known here). --files benchmarks the given GGUF files instead of the SmolLM2 grid.
// docs/performance.md has the method and the current tables.

import { Command, Option } from "commander";
import { cpus, loadavg } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { supportedArchitectures } from "../src/archs/index.js";
import { cpuBackend } from "../src/backends/index.js";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { fixturesDir } from "../test/helpers/fixtures.js";
import { kvBytesPerToken, mainWeightType, pairedBound, weightBytesPerToken } from "./bounds.js";
import { median } from "./stats.js";
import { binds as bindsOf, type KernelRate } from "./kernelRates.js";
import { BENCH_TYPES, ensureSmolModel, GEMMA3_NAME, gemma3Path, type BenchModel, type BenchType } from "./models.js";
import { ensureLlamaCpp, ensureLlamaCppGpu, ensureNodeLlamaCpp, llamaBench, runMeasured, type LlamaCpp, type Measurement } from "./peers.js";
import { DEFAULT_TESTS, parseTest, type BenchTest } from "./tests.js";
import { trainingRows, printTraining, TRAINING_ROWS, type TrainingOptions } from "./training.js";
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

const PEERS = ["llama.cpp", "node-llama-cpp"] as const;
type Peer = (typeof PEERS)[number] | "toy";
const list = (s: string) => s.split(",").map((x) => x.trim()).filter(Boolean);

const program = new Command("bench")
  .description("toy against llama.cpp (inference grid) and PyTorch (training rows)")
  .option("--json", "one JSON object per line instead of tables")
  .option("--quick", "a subset: Q4_1 and Q4_K_M; pp128, tg64, tg64@1024; 2 threads; 1 repetition; the bench-shape training row")
  .option("--models <list>", `models: ${[...BENCH_TYPES, GEMMA3_NAME].join(",")}`)
  .option("--tests <list>", `tests: ppN, tgN[@D]`, DEFAULT_TESTS.join(","))
  .option("--threads <list>", "thread counts", "1,2")
  .option("--reps <n>", "runs of each test and peer, each in its own process (medians reported)", "3")
  .option("--repetitions <n>", "timed repetitions of the test inside each run, after its warm-up (their mean t/s; llama-bench's -r)", "5")
  .option("--peers <list>", `inference peers: ${PEERS.join(",")}`, PEERS.join(","))
  .option("--cache-type <type>", "toy's KV-cache type where toy has them (llama.cpp's default is f16)", "f16")
  .addOption(new Option("--only <part>", "run only one part").choices(["inference", "training"]))
  .option("--training <list>", `training rows: ${TRAINING_ROWS.join(",")}`, TRAINING_ROWS.join(","))
  .option("--torch <list>", "PyTorch peers of the training rows: eager,compile (none: toy alone)", "eager,compile")
  .option("--steps <n>", "timed training steps per process (after 2 warm-up steps)", "3")
  .addOption(new Option("--backend <name>", "toy's backend for the inference grid (webgpu: next to llama.cpp's GPU build, -ngl 99)").choices(["cpu", "webgpu"]).default("cpu"))
  .option("--files <list>", "GGUF files to measure instead of the SmolLM2 grid (labelled by file name)");
program.parse();
const opts = program.opts();
const quick = Boolean(opts.quick);
const src = (name: string) => program.getOptionValueSource(name);
const json = Boolean(opts.json);
const reps = quick && src("reps") === "default" ? 1 : Number(opts.reps);
const repetitions = Number(opts.repetitions);
// On webgpu the threads are llama.cpp's host threads: its default, one per core, unless told.
const threadCounts = (src("threads") !== "default" ? list(opts.threads) : opts.backend === "webgpu" ? [String(cpus().length)] : quick ? ["2"] : list(opts.threads)).map(Number);
const testNames = quick && src("tests") === "default" ? ["pp128", "tg64", "tg64@1024"] : list(opts.tests);
const modelNames = opts.models ? list(opts.models) : quick ? ["Q4_1", "Q4_K_M"] : [...BENCH_TYPES, GEMMA3_NAME];
const backend = String(opts.backend) as "cpu" | "webgpu";
const onGpu = backend === "webgpu";
// node-llama-cpp's prebuilt binary is the CPU build: no GPU peer.
const peers = (list(opts.peers) as Peer[]).filter((p) => !(onGpu && p === "node-llama-cpp"));
const files = opts.files ? list(opts.files) : null;
const cacheType = String(opts.cacheType);
const log = (s: string) => process.stderr.write(s + "\n");

function usage(message: string): never {
  log(`bench: ${message}`);
  process.exit(2);
}
if (!(reps >= 1) || !Number.isInteger(repetitions) || !(repetitions >= 1) || threadCounts.some((t) => !(t >= 1))) usage("--reps, --repetitions and --threads must be positive integers");
for (const p of peers) if (!(PEERS as readonly string[]).includes(p)) usage(`unknown peer "${p}" (expected ${PEERS.join(", ")})`);
for (const m of modelNames) if (m !== GEMMA3_NAME && !(BENCH_TYPES as readonly string[]).includes(m)) usage(`unknown model "${m}" (expected ${[...BENCH_TYPES, GEMMA3_NAME].join(", ")})`);
let tests: BenchTest[];
try { tests = testNames.map(parseTest); } catch (e) { usage((e as Error).message); }

const root = fileURLToPath(new URL("../../", import.meta.url));
const benchDir = join(root, ".bench");
const modelsDir = process.env.TOY_BENCH_MODELS ?? join(benchDir, "models");

const fmt = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits));
const lastLine = (s: string) => s.trim().split("\n").at(-1) ?? "";
const errorOf = (stderr: string) => stderr.trim().split("\n").filter(Boolean).slice(-2).join(" | ");

async function toyRun(model: string, threads: number, test: BenchTest): Promise<(Measurement & { cache_type: string; adapter?: string }) | { error: string }> {
  const r = await runMeasured(process.execPath, [join(root, "dist", "bench", "toyRun.js"), model, String(threads), test.name, cacheType, backend, String(repetitions)]);
  if (r.status !== 0) return { error: errorOf(r.stderr) };
  return JSON.parse(lastLine(r.stdout));
}

async function nodeLlamaCppRun(peerDir: string, model: string, threads: number, test: BenchTest): Promise<Measurement | { error: string }> {
  const r = await runMeasured(process.execPath, [join(root, "dist", "bench", "peerRun.js"), peerDir, model, String(threads), test.name, String(repetitions)]);
  if (r.status !== 0) return { error: errorOf(r.stderr) };
  return JSON.parse(lastLine(r.stdout));
}

/** bench/kernelRates.ts in a process of its own (none when it fails: the rows then say nothing of what binds). */
function kernelRates(): KernelRate[] {
  const r = spawnSync(process.execPath, [join(root, "dist", "bench", "kernelRates.js")], { encoding: "utf8" });
  if (r.status === 0) return JSON.parse(r.stdout) as KernelRate[];
  log(`decode kernel rates not measured: ${r.stderr.trim() || `exit ${r.status}`}`);
  return [];
}

/** The grid's models that exist (made on first use), and the ones skipped with the reason. */
function resolveModels(llama: LlamaCpp | null): { models: BenchModel[]; skipped: { name: string; reason: string }[] } {
  const models: BenchModel[] = [], skipped: { name: string; reason: string }[] = [];
  if (files) {
    for (const path of files) {
      if (existsSync(path)) models.push({ name: basename(path), label: basename(path).replace(/\.gguf$/, ""), path });
      else skipped.push({ name: path, reason: "no such file" });
    }
    return { models, skipped };
  }
  const fx = fixturesDir();
  for (const name of modelNames) {
    if (name === GEMMA3_NAME) {
      const path = gemma3Path();
      if (!existsSync(path)) { skipped.push({ name, reason: `${path} not found (set $TOY_GEMMA3)` }); continue; }
      const arch = String(readGGUFHeader(path).metadata.get("general.architecture"));
      if (!supportedArchitectures().includes(arch)) { skipped.push({ name, reason: `toy does not support the ${arch} architecture yet` }); continue; }
      models.push({ name, label: "Gemma 3 270M Q4_K_M", path });
      continue;
    }
    if (!fx) { skipped.push({ name, reason: "the fixtures (../shared/fixtures) are absent" }); continue; }
    const made = ensureSmolModel(fx, modelsDir, name as BenchType, llama ? join(llama.bin, "llama-quantize") : null, log);
    if (typeof made === "string") models.push({ name, label: `SmolLM2-135M ${name}`, path: made });
    else skipped.push({ name, reason: made.error });
  }
  return { models, skipped };
}

/** A run's measurement; toy's decode runs also carry the read bandwidth (bytes/s) measured right beside them. */
type Run = Measurement & { bandwidth?: number };
interface Cell { threads: number; model: BenchModel; test: BenchTest; runs: Record<Peer, Run[]>; errors: string[]; toyCacheType?: string }

async function inference(): Promise<void> {
  const cpu = onGpu ? null : cpuBackend();
  if (cpu && "error" in cpu) { log(`the cpu backend is not built: ${cpu.error}`); process.exit(4); }
  const llama = onGpu ? ensureLlamaCppGpu(benchDir, log) : ensureLlamaCpp(benchDir, log);
  if ("error" in llama) log(`llama.cpp unavailable: ${llama.error}`);
  const lc = "error" in llama ? null : llama;
  const nlc = peers.includes("node-llama-cpp") ? ensureNodeLlamaCpp(join(benchDir, "peer"), log) : null;
  if (nlc && typeof nlc !== "string") log(`node-llama-cpp unavailable: ${nlc.error}`);
  const nlcDir = typeof nlc === "string" ? nlc : null;
  const { models, skipped } = resolveModels(lc);
  for (const s of skipped) log(`skipping ${s.name}: ${s.reason}`);
  if (lc) log(`llama.cpp ${lc.version} (${lc.bin})`);
  const load0 = loadavg();

  // Which types' decode waits on memory (bench/kernelRates.ts), measured once, before the grid.
  const rates: KernelRate[] = cpu ? kernelRates() : [];
  for (const r of rates) log(`decode product, 1 thread, ${r.type}: ${r.in_cache_gbs} GB/s in cache, ${r.from_memory_gbs} GB/s from memory`);
  /** What binds a model's decode: what binds its main weight type's product (null: not measured). */
  const binds = (path: string): string | null => {
    const r = rates.find((x) => x.type === mainWeightType(path));
    return r ? bindsOf(r) : null;
  };

  let adapter: string | undefined;
  const cells: Cell[] = [];
  for (const threads of threadCounts) for (const model of models) for (const test of tests) {
    cells.push({ threads, model, test, runs: { toy: [], "llama.cpp": [], "node-llama-cpp": [] }, errors: [] });
  }
  const bandwidth = new Map<number, number[]>(threadCounts.map((t) => [t, []]));
  const total = reps * cells.length;
  const start = performance.now();
  let done = 0;
  const stop = (signal: NodeJS.Signals) => { log(`bench: ${signal}: printing the runs done so far`); report(true); process.exit(signal === "SIGINT" ? 130 : 143); };
  process.once("SIGINT", stop).once("SIGTERM", stop);
  for (let rep = 0; rep < reps; rep++) {
    for (const cell of cells) {
      const { threads, model, test, runs } = cell;
      const line: string[] = [];
      // A decode run's bound comes from the bandwidth read just before and just after it (the
      // mean of the two), so that it and the run see the machine in the same state (docs/performance.md).
      const readBandwidth = cpu && test.kind === "tg" ? () => cpu.addon.readBandwidth(threads) : null;
      const before = readBandwidth?.();
      const t = await toyRun(model.path, threads, test);
      const after = readBandwidth?.();
      const read = before !== undefined && after !== undefined ? [before, after] : null;
      if (read) bandwidth.get(threads)!.push(...read);
      if ("error" in t) cell.errors.push(`toy: ${t.error}`);
      else { runs.toy.push(read ? { ...t, bandwidth: (read[0] + read[1]) / 2 } : t); cell.toyCacheType = t.cache_type; adapter ??= t.adapter; }
      line.push(`toy ${"error" in t ? "failed" : `${fmt(t.tps)} (1st ${fmt(t.first_tps)})`}${read ? ` [read ${fmt(read[0] / 1e9, 1)} / ${fmt(read[1] / 1e9, 1)} GB/s]` : ""}`);
      if (lc && peers.includes("llama.cpp")) {
        const p = await llamaBench(lc.bin, model.path, threads, test, onGpu, repetitions);
        if ("error" in p) cell.errors.push(`llama.cpp: ${p.error}`); else runs["llama.cpp"].push(p);
        line.push(`llama.cpp ${"error" in p ? "failed" : fmt(p.tps)}`);
      }
      if (nlcDir) {
        const p = await nodeLlamaCppRun(nlcDir, model.path, threads, test);
        if ("error" in p) cell.errors.push(`node-llama-cpp: ${p.error}`); else runs["node-llama-cpp"].push(p);
        line.push(`node-llama-cpp ${"error" in p ? "failed" : fmt(p.tps)}`);
      }
      done++;
      const elapsed = (performance.now() - start) / 1000;
      log(`[${done}/${total}] rep ${rep + 1} ${threads}t ${model.name} ${test.name}: ${line.join(", ")} t/s ` +
        `(${Math.round(elapsed / 60)} min, ~${Math.round((elapsed / done) * (total - done) / 60)} min left, load ${loadavg()[0].toFixed(1)})`);
      if (cell.errors.length && cell.errors.length <= 3) log(`  ${cell.errors.at(-1)}`);
    }
  }
  report(false);

  // The tables (or --json lines) of the runs done so far: at the end, or when the run is stopped
  // (SIGINT, SIGTERM, a timeout's kill) part-way, so that a long grid cut short still reports
  // every finished cell (the repetitions go over the whole grid one after another).
  function report(partial: boolean): void {
    const load1 = loadavg();
    const rows = cells.filter((c) => c.runs.toy.length || c.errors.length || Object.values(c.runs).some((r) => r.length)).map(({ threads, model, test, runs, errors, toyCacheType }) => {
      const toy = median(runs.toy.map((x) => x.tps)), lcpp = median(runs["llama.cpp"].map((x) => x.tps)), nl = median(runs["node-llama-cpp"].map((x) => x.tps));
      const paired = test.kind === "tg" ? pairedBound(runs.toy, weightBytesPerToken(model.path) + kvBytesPerToken(model.path, test.depth + test.n / 2, "f16")) : null;
      const bound = paired?.bound ?? null, share = paired?.share ?? null;
      return {
        kind: "inference", threads, model: model.name, label: model.label, file: model.path, test: test.name,
        toy_tps: toy, toy_first_tps: median(runs.toy.map((x) => x.first_tps ?? NaN)), llama_cpp_tps: lcpp, node_llama_cpp_tps: nl,
        ratio_llama_cpp: toy / lcpp, ratio_node_llama_cpp: toy / nl,
        bound_tps: bound, toy_of_bound: share, binds: bound === null ? null : binds(model.path),
        toy_bandwidth_gbs: runs.toy.map((x) => (x.bandwidth === undefined ? null : +(x.bandwidth / 1e9).toFixed(1))),
        toy_rss_mb: median(runs.toy.map((x) => x.rss_mb)), llama_cpp_rss_mb: median(runs["llama.cpp"].map((x) => x.rss_mb)),
        node_llama_cpp_rss_mb: median(runs["node-llama-cpp"].map((x) => x.rss_mb)),
        toy_runs: runs.toy.map((x) => x.tps), llama_cpp_runs: runs["llama.cpp"].map((x) => x.tps), node_llama_cpp_runs: runs["node-llama-cpp"].map((x) => x.tps),
        toy_samples: runs.toy.map((x) => x.samples ?? []), llama_cpp_samples: runs["llama.cpp"].map((x) => x.samples ?? []),
        toy_cache_type: toyCacheType ?? null, errors,
      };
    });
    const meta = {
      kind: "meta", date: new Date().toISOString(), cpu: cpus()[0]?.model, cores: cpus().length, backend, adapter: adapter ?? null,
      load_before: load0.map((x) => +x.toFixed(2)), load_after: load1.map((x) => +x.toFixed(2)),
      llama_cpp: lc ? { version: lc.version, commit: lc.commit, bin: lc.bin } : null, reps, repetitions,
      decode_kernel_rates: rates,
      bandwidth_gbs: Object.fromEntries([...bandwidth].filter(([, b]) => b.length).map(([t, b]) => [t, +(median(b) / 1e9).toFixed(1)])),
      toy_cache_type: rows.find((r) => r.toy_cache_type)?.toy_cache_type ?? null, llama_cpp_cache_type: "f16",
      minutes: +((performance.now() - start) / 60000).toFixed(1), skipped,
      ...(partial ? { stopped_after_runs: done, of_runs: total } : {}),
    };
    if (json) {
      process.stdout.write(JSON.stringify(meta) + "\n");
      for (const r of rows) process.stdout.write(JSON.stringify(r) + "\n");
      return;
    }
    const line = (cells: string[]) => "| " + cells.join(" | ") + " |";
    for (const threads of threadCounts) {
      const head = ["model", "test", "toy t/s", "toy 1st t/s", "llama.cpp t/s", "toy/llama.cpp", ...(nlcDir ? ["node-llama-cpp t/s", "toy/nlc"] : []), "bound t/s", "toy/bound", "binds", "toy RSS MB", "llama.cpp RSS MB"];
      const table = rows.filter((r) => r.threads === threads).map((r) => [
        r.label, r.test, fmt(r.toy_tps), fmt(r.toy_first_tps), fmt(r.llama_cpp_tps), fmt(r.ratio_llama_cpp, 2),
        ...(nlcDir ? [fmt(r.node_llama_cpp_tps), fmt(r.ratio_node_llama_cpp, 2)] : []),
        r.bound_tps === null ? "" : fmt(r.bound_tps), r.toy_of_bound === null ? "" : fmt(r.toy_of_bound, 2), r.binds ?? "", fmt(r.toy_rss_mb, 0), fmt(r.llama_cpp_rss_mb, 0),
      ]);
      process.stdout.write(`\n### ${threads} thread${threads > 1 ? "s" : ""}\n\n` + [line(head), line(head.map(() => "---")), ...table.map(line)].join("\n") + "\n");
    }
    process.stdout.write(`\nllama.cpp ${lc ? `${lc.version}` : "unavailable"}; toy KV cache ${meta.toy_cache_type ?? "-"}, llama.cpp f16; ` +
      `medians of ${reps} interleaved runs, each the mean of ${repetitions} timed repetitions after a warm-up (toy 1st: the first alone); read bandwidth beside the decode runs (median) ${Object.entries(meta.bandwidth_gbs).map(([t, b]) => `${b} GB/s (${t}t)`).join(", ")}; ` +
      `load average ${load0[0].toFixed(1)} → ${load1[0].toFixed(1)}; ${meta.minutes} min; ${cpus()[0]?.model}` +
      (partial ? `; STOPPED after ${done} of ${total} runs (a cell's median is over the repetitions it finished)` : "") +
      (onGpu ? `; toy on webgpu (${adapter ?? "adapter unknown"}), llama.cpp -ngl 99` : "") + "\n");
    if (rates.length) {
      process.stdout.write("\n### Decode products, 1 thread: weight GB/s read in cache and from memory\n\n" +
        [line(["type", "in cache", "from memory", "binds"]), line(["---", "---", "---", "---"]),
          ...rates.map((r) => line([r.type, fmt(r.in_cache_gbs, 1), fmt(r.from_memory_gbs, 1), bindsOf(r)]))].join("\n") + "\n");
    }
    for (const s of skipped) process.stdout.write(`skipped ${s.name}: ${s.reason}\n`);
    for (const r of rows) if (r.errors.length) process.stdout.write(`${r.threads}t ${r.model} ${r.test}: ${r.errors.length} failed runs, e.g. ${r.errors[0]}\n`);
  }
}

async function main(): Promise<void> {
  if (opts.only !== "training") await inference();
  if (opts.only !== "inference") {
    const rowsWanted = quick && src("training") === "default" ? ["bench"] : list(opts.training);
    const training: TrainingOptions = {
      root, benchDir, rows: rowsWanted, threads: threadCounts, reps, steps: Number(opts.steps),
      torch: list(opts.torch), log, fixtures: fixturesDir() ?? null,
    };
    const result = await trainingRows(training);
    if (json) for (const r of result) process.stdout.write(JSON.stringify(r) + "\n");
    else printTraining(result, threadCounts);
  }
}

await main();
