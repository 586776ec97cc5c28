// The peers toy is measured against, installed only for the benchmark (never dependencies):
// node-llama-cpp from npm (what a TypeScript user installs; CPU build only) into .bench/peer,
// and llama.cpp itself, native, built from the source node-llama-cpp carries
// (llama/gitRelease.bundle) with -DGGML_NATIVE=ON into .bench/llama.cpp.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const NLC_VERSION = "3.22.1";

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

/** Build llama-bench natively; returns the binary or an error. */
export function ensureLlamaBench(benchDir: string, peerDir: string, log: (s: string) => void): string | { error: string } {
  const src = join(benchDir, "llama.cpp");
  const bin = join(src, "build", "bin", "llama-bench");
  if (existsSync(bin)) return bin;
  const bundle = join(peerDir, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle");
  if (!existsSync(bundle)) return { error: `${bundle} not found` };
  if (!existsSync(src) && !run("git", ["clone", "-q", bundle, src], benchDir, log)) return { error: "git clone of the llama.cpp bundle failed" };
  if (!run("cmake", ["-B", "build", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_TESTS=OFF"], src, log)) return { error: "cmake configure failed" };
  if (!run("cmake", ["--build", "build", "--target", "llama-bench", "-j2"], src, log)) return { error: "cmake build failed" };
  return existsSync(bin) ? bin : { error: `${bin} not built` };
}

export interface Measurement {
  pp_tps: number;
  tg_tps: number;
  rss_mb: number;
}

/** Run a command, polling its peak resident memory (VmHWM) from /proc while it runs. */
export function runMeasured(cmd: string, args: string[], timeoutMs = 600_000): Promise<{ stdout: string; stderr: string; status: number | null; peakRssMb: number }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
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
    child.on("close", (status) => {
      clearInterval(poll);
      clearTimeout(timer);
      resolve({ stdout, stderr, status, peakRssMb: peakKb / 1024 });
    });
  });
}

/** llama-bench -p PP -n TG: tokens/s of each test (the mean over its repetitions). */
export async function llamaBench(bin: string, model: string, threads: number, pp: number, tg: number, reps: number): Promise<Measurement | { error: string }> {
  const r = await runMeasured(bin, ["-m", model, "-p", String(pp), "-n", String(tg), "-t", String(threads), "-r", String(reps), "-o", "json", "-fa", "0"]);
  if (r.status !== 0) return { error: `llama-bench exited ${r.status}: ${r.stderr.trim().split("\n").slice(-2).join(" | ")}` };
  const rows = JSON.parse(r.stdout) as { n_prompt: number; n_gen: number; avg_ts: number }[];
  const ppRow = rows.find((x) => x.n_prompt === pp && x.n_gen === 0);
  const tgRow = rows.find((x) => x.n_gen === tg && x.n_prompt === 0);
  return { pp_tps: ppRow?.avg_ts ?? NaN, tg_tps: tgRow?.avg_ts ?? NaN, rss_mb: r.peakRssMb };
}
