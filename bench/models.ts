// The benchmark's models: the real SmolLM2-135M-Instruct in every common storage type, made once
// from the Q4_1 fixture with llama.cpp's `llama-quantize --allow-requantize` (speed does not
// depend on the quality lost by requantizing), plus the real Gemma 3 270M Q4_K_M where present.
// Files are cached in $TOY_BENCH_MODELS (default .bench/models) and written atomically, so
// several benchmarks can share one cache.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The storage types of the grid, in the order the tables list them. */
export const BENCH_TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K_M", "Q5_K_M", "Q6_K"] as const;
export type BenchType = (typeof BENCH_TYPES)[number];

export interface BenchModel {
  /** The name the tables and --models use: a storage type, or "gemma3-270m". */
  name: string;
  /** What the tables print: the model and its storage type. */
  label: string;
  path: string;
}

export const SMOL_FIXTURE = "SmolLM2-135M-Instruct.Q4_1.gguf";
export const GEMMA3_NAME = "gemma3-270m";

/** Where Gemma 3 270M Q4_K_M is: $TOY_GEMMA3, else the fixture cache. */
export function gemma3Path(): string {
  return process.env.TOY_GEMMA3 ?? join(homedir(), ".cache", "toy-fixtures", "gemma-3-270m-q4_k_m.gguf");
}

/**
 * The SmolLM2 file of `type` in `dir`, made with `quantize` (llama-quantize's path) from the
 * fixture if it is not there yet. Q4_1 is the fixture itself.
 */
export function ensureSmolModel(fixturesDir: string, dir: string, type: BenchType, quantize: string | null, log: (s: string) => void): string | { error: string } {
  const source = join(fixturesDir, "models", SMOL_FIXTURE);
  if (type === "Q4_1") return existsSync(source) ? source : { error: `${source} not found` };
  const path = join(dir, `SmolLM2-135M-Instruct.${type}.gguf`);
  if (existsSync(path)) return path;
  if (!existsSync(source)) return { error: `${source} not found` };
  if (!quantize) return { error: `${path} is missing and llama-quantize is not available to make it` };
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  log(`making ${path} (llama-quantize --allow-requantize ${SMOL_FIXTURE} ${type}) ...`);
  const r = spawnSync(quantize, ["--allow-requantize", source, tmp, type, "2"], { encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0 || !existsSync(tmp)) {
    rmSync(tmp, { force: true });
    return { error: `llama-quantize ${type} failed (${r.status ?? r.signal}): ${(r.stderr ?? "").trim().split("\n").slice(-2).join(" | ")}` };
  }
  renameSync(tmp, path);
  return path;
}
