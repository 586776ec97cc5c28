// The peers toy is measured against, installed only for the benchmark (never dependencies):
// - llama.cpp itself, native: the newest source that can be had offline, the `vendor/llama.cpp`
//   of the llama-cpp-python sdist on PyPI (LLAMA_CPP_PYTHON below), built with -DGGML_NATIVE=ON
//   and otherwise llama.cpp's defaults into .bench/llama.cpp/build. $TOY_LLAMA_CPP names an
//   existing build's bin directory instead (it must hold llama-bench and llama-quantize).
// - for --backend webgpu, the same source built with llama.cpp's own GPU backend into
//   .bench/llama.cpp/build-gpu: CUDA where nvcc is found, else Vulkan where glslc is found;
//   $TOY_LLAMA_CPP_GPU names an existing GPU build's bin directory instead.
// - node-llama-cpp from npm (what a TypeScript user installs; CPU build only) into .bench/peer.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import type { BenchTest } from "./tests.js";

const NLC_VERSION = "3.22.1";
/** llama-cpp-python 0.3.36 (2026-10-01) vendors llama.cpp at commit 0c1e570. */
export const LLAMA_CPP_PYTHON = "0.3.36";
/**
 * llama.cpp's own build options, native, but without its AMX kernels: at 0c1e570 they stop with
 * SIGILL on the first tile load on Intel Xeons with AMX (llama.cpp PR #26954, unmerged: the tile
 * configuration on the stack is optimized away), so every quantized model fails. An explicit
 * -mno-amx-* wins over -march=native in any order; on CPUs without AMX it changes nothing.
 */
const NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16";
const LLAMA_CMAKE_FLAGS = ["-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_TESTS=OFF", `-DCMAKE_C_FLAGS=${NO_AMX}`, `-DCMAKE_CXX_FLAGS=${NO_AMX}`];
/** The tools the benchmark and the tests against llama.cpp (test/lora.test.ts) use. */
export const LLAMA_TOOLS = ["llama-bench", "llama-server", "llama-perplexity", "llama-quantize", "llama-batched-bench", "llama-export-lora"];

function run(cmd: string, args: string[], cwd: string, log: (s: string) => void): boolean {
  log(`$ ${cmd} ${args.join(" ")}`);
  // A compiler's warnings can run past spawnSync's default 1 MiB buffer, which kills the child.
  const r = spawnSync(cmd, args, { cwd, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8", maxBuffer: 256 * 2 ** 20 });
  if (r.status !== 0) log(`  failed (${r.status ?? r.signal ?? r.error?.message}): ${(r.stderr ?? "").trim().split("\n").slice(-3).join(" | ")}`);
  return r.status === 0;
}

/** Install node-llama-cpp (CPU prebuilt only) into `dir`; returns dir or an error. */
export function ensureNodeLlamaCpp(dir: string, log: (s: string) => void): string | { error: string } {
  const marker = join(dir, "node_modules", "node-llama-cpp", "package.json");
  if (existsSync(marker)) return dir;
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, "package.json"))) writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "toy-bench-peer", private: true }));
  const ok = run("npm", ["install", "--no-save", "--omit=optional", "--no-audit", "--no-fund", `node-llama-cpp@${NLC_VERSION}`, `@node-llama-cpp/linux-x64@${NLC_VERSION}`], dir, log);
  return ok && existsSync(marker) ? dir : { error: "npm install node-llama-cpp failed" };
}

export interface LlamaCpp {
  /** The directory holding llama-bench, llama-quantize, … */
  bin: string;
  /** `llama-bench --version`'s first line, e.g. "version: 0.5.0-dev (build 1, commit 0c1e570)". */
  version: string;
  /** The short commit, e.g. "0c1e570" ("unknown" when the build could not tell). */
  commit: string;
}

/** The default build directory's bin (what test/lora.test.ts also looks at). */
export const defaultLlamaBin = (benchDir: string): string => join(benchDir, "llama.cpp", "build", "bin");

function describeBuild(bin: string): LlamaCpp | { error: string } {
  const missing = ["llama-bench", "llama-quantize"].filter((t) => !existsSync(join(bin, t)));
  if (missing.length) return { error: `${bin} has no ${missing.join(", ")}` };
  const r = spawnSync(join(bin, "llama-bench"), ["--version"], { encoding: "utf8" });
  const version = `${r.stdout ?? ""}${r.stderr ?? ""}`.split("\n").find((l) => l.startsWith("version")) ?? "version unknown";
  return { bin, version, commit: /commit ([0-9a-f]+)/.exec(version)?.[1] ?? "unknown" };
}

/**
 * llama.cpp's tools: $TOY_LLAMA_CPP if set (an existing build's bin directory), else
 * .bench/llama.cpp/build/bin, built there from the llama-cpp-python sdist on first use
 * (pip download; cmake; ~15 minutes on 2 cores).
 */
export function ensureLlamaCpp(benchDir: string, log: (s: string) => void): LlamaCpp | { error: string } {
  const given = process.env.TOY_LLAMA_CPP;
  if (given) return describeBuild(given);
  const bin = defaultLlamaBin(benchDir);
  if (LLAMA_TOOLS.every((t) => existsSync(join(bin, t)))) return describeBuild(bin);
  const source = llamaCppSource(benchDir, log);
  if (typeof source !== "string") return source;
  const build = join(benchDir, "llama.cpp", "build");
  if (!run("cmake", ["-S", source, "-B", build, ...LLAMA_CMAKE_FLAGS], benchDir, log)) return { error: "cmake configure failed" };
  if (!run("cmake", ["--build", build, "--target", ...LLAMA_TOOLS, "-j2"], benchDir, log)) return { error: "cmake build failed" };
  return describeBuild(bin);
}

const onPath = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;

/**
 * llama.cpp with its own GPU backend, the peer of toy's webgpu rows: $TOY_LLAMA_CPP_GPU if set,
 * else .bench/llama.cpp/build-gpu/bin, built on first use with CUDA (for the GPU found:
 * CMAKE_CUDA_ARCHITECTURES=native) where nvcc is on the PATH, else with Vulkan where glslc is.
 */
export function ensureLlamaCppGpu(benchDir: string, log: (s: string) => void): LlamaCpp | { error: string } {
  const given = process.env.TOY_LLAMA_CPP_GPU;
  if (given) return describeBuild(given);
  const build = join(benchDir, "llama.cpp", "build-gpu"), bin = join(build, "bin");
  if (existsSync(join(bin, "llama-bench"))) return describeBuild(bin);
  const gpu = onPath("nvcc") ? ["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=native"] : onPath("glslc") ? ["-DGGML_VULKAN=ON"] : null;
  if (!gpu) return { error: "no GPU toolchain to build llama.cpp's GPU backend (neither nvcc nor glslc is on the PATH); set $TOY_LLAMA_CPP_GPU to a GPU build's bin directory" };
  const source = llamaCppSource(benchDir, log);
  if (typeof source !== "string") return source;
  const jobs = String(Math.max(1, availableParallelism()));
  if (!run("cmake", ["-S", source, "-B", build, ...LLAMA_CMAKE_FLAGS, ...gpu], benchDir, log)) return { error: "cmake configure (GPU) failed" };
  if (!run("cmake", ["--build", build, "--target", "llama-bench", "llama-quantize", "-j", jobs], benchDir, log)) return { error: "cmake build (GPU) failed" };
  return describeBuild(bin);
}

/** The llama.cpp source of the llama-cpp-python sdist, downloaded and unpacked on first use. */
function llamaCppSource(benchDir: string, log: (s: string) => void): string | { error: string } {
  const srcDir = join(benchDir, "src");
  mkdirSync(srcDir, { recursive: true });
  const sdist = () => readdirSync(srcDir).find((f) => f.startsWith(`llama_cpp_python-${LLAMA_CPP_PYTHON}`) && f.endsWith(".tar.gz"));
  if (!sdist() && !run("python3", ["-m", "pip", "download", "--no-deps", "--no-binary", ":all:", `llama-cpp-python==${LLAMA_CPP_PYTHON}`, "-d", srcDir], benchDir, log)) {
    return { error: `pip download llama-cpp-python==${LLAMA_CPP_PYTHON} failed` };
  }
  const tarball = sdist();
  if (!tarball) return { error: `no llama_cpp_python-${LLAMA_CPP_PYTHON}*.tar.gz in ${srcDir}` };
  const source = join(srcDir, tarball.replace(/\.tar\.gz$/, ""), "vendor", "llama.cpp");
  if (!existsSync(source) && !run("tar", ["xzf", tarball], srcDir, log)) return { error: `tar xzf ${tarball} failed` };
  if (!existsSync(join(source, "CMakeLists.txt"))) return { error: `${source} has no CMakeLists.txt` };
  return source;
}

export interface Measurement {
  /** Tokens/s of the test: the mean of its timed runs' t/s, as llama-bench's avg_ts. */
  tps: number;
  /** Each timed run's t/s, in order (the first one right after the warm-up). */
  samples?: number[];
  first_tps?: number;
  /** Peak resident memory of the process, MiB. */
  rss_mb: number;
}

/** Run a command, polling its peak resident memory (VmHWM) from /proc while it runs. */
export function runMeasured(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 1_800_000): Promise<{ stdout: string; stderr: string; status: number | null; signal: NodeJS.Signals | null; peakRssMb: number }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "", stderr = "", peakKb = 0;
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch { /* exited */ }
    }, 20);
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (status, signal) => {
      clearInterval(poll);
      clearTimeout(timer);
      resolve({ stdout, stderr, status, signal, peakRssMb: peakKb / 1024 });
    });
  });
}

/**
 * One llama-bench process for one test, with llama.cpp's defaults (flash attention auto, F16 KV
 * cache, weight repacking on, its warm-up run, then `repetitions` timed runs: -r, default 5):
 * pp N is `-p N -n 0`, tg N at depth D is `-p 0 -n N -d D`; `gpu`: every layer offloaded
 * (-ngl 99). tps is llama-bench's avg_ts, the mean of the runs' t/s.
 */
export async function llamaBench(bin: string, model: string, threads: number, test: BenchTest, gpu = false, repetitions = 5): Promise<Measurement | { error: string }> {
  const shape = test.kind === "pp" ? ["-p", String(test.n), "-n", "0"] : ["-p", "0", "-n", String(test.n), "-d", String(test.depth)];
  const r = await runMeasured(join(bin, "llama-bench"), ["-m", model, ...shape, "-t", String(threads), "-r", String(repetitions), "-o", "json", ...(gpu ? ["-ngl", "99"] : [])]);
  if (r.status !== 0) return { error: `llama-bench ${r.signal ? `killed by ${r.signal}` : `exited ${r.status}`}: ${r.stderr.trim().split("\n").slice(-2).join(" | ")}` };
  const rows = JSON.parse(r.stdout) as { n_prompt: number; n_gen: number; n_depth?: number; avg_ts: number; samples_ts?: number[] }[];
  const row = rows.find((x) => (test.kind === "pp" ? x.n_prompt === test.n && x.n_gen === 0 : x.n_gen === test.n && x.n_prompt === 0));
  if (!row) return { error: `llama-bench printed no ${test.name} row` };
  return { tps: row.avg_ts, samples: row.samples_ts, first_tps: row.samples_ts?.[0], rss_mb: r.peakRssMb };
}
