// The memory-bandwidth bound of decode: a generated token reads every weight once (an untied
// embedding only one row) and the cached keys and values of every layer, so it cannot be faster
// than measured read bandwidth ÷ (weight bytes + KV bytes per token).

import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { typeName } from "../src/io/gguf/types.js";
import { median } from "./stats.js";

/** Bytes of weights read per generated token: every tensor, but only one row of an untied embedding. */
export function weightBytesPerToken(path: string): number {
  const h = readGGUFHeader(path);
  const tied = !h.tensors.some((t) => t.name === "output.weight");
  return h.tensors.reduce((s, t) => s + (t.name === "token_embd.weight" && !tied ? t.byteLength / t.dims[1] : t.byteLength), 0);
}

/** Bytes of one cached value of each KV type (q8_0: 34 bytes per block of 32). */
export const KV_VALUE_BYTES: Record<string, number> = { f32: 4, f16: 2, bf16: 2, q8_0: 34 / 32 };

/**
 * Bytes of keys and values a decode step reads with `cached` positions in the cache: every layer
 * reads K and V of its positions, a sliding-window layer at most its window (Gemma 2: every
 * other layer from the first; Gemma 3: five of every six).
 */
export function kvBytesPerToken(path: string, cached: number, cacheType = "f16"): number {
  const m = readGGUFHeader(path).metadata;
  const arch = String(m.get("general.architecture"));
  const get = (key: string) => m.get(`${arch}.${key}`) as number | undefined;
  const nLayer = Number(get("block_count")), nHead = Number(get("attention.head_count"));
  const nKV = Number(get("attention.head_count_kv") ?? nHead);
  const keyLength = Number(get("attention.key_length") ?? Number(get("embedding_length")) / nHead);
  const valueLength = Number(get("attention.value_length") ?? keyLength);
  const window = get("attention.sliding_window");
  const sliding = (l: number) => window !== undefined && (arch === "gemma2" ? l % 2 === 0 : arch === "gemma3" ? l % 6 !== 5 : false);
  let rows = 0;
  for (let l = 0; l < nLayer; l++) rows += sliding(l) ? Math.min(cached, Number(window)) : cached;
  return rows * nKV * (keyLength + valueLength) * KV_VALUE_BYTES[cacheType];
}

/** The storage type holding most of a file's weight bytes, by name ("Q4_K" for a Q4_K_M file). */
export function mainWeightType(path: string): string {
  const bytes = new Map<number, number>();
  for (const t of readGGUFHeader(path).tensors) bytes.set(t.type, (bytes.get(t.type) ?? 0) + t.byteLength);
  return typeName([...bytes].sort((a, b) => b[1] - a[1])[0][0]);
}

/**
 * A decode cell's bound from its runs, each run carrying the read bandwidth (bytes/s) measured
 * right beside it: the bound is the median of the runs' own bounds (bandwidth ÷ bytes per token),
 * and the share of it is the median of each run's t/s over its own bound, so that a run and its
 * bound see the machine in the same state (its bandwidth drifts, and with 2 threads it is
 * bimodal here). Null when no run has a reading.
 */
export function pairedBound(runs: readonly { tps: number; bandwidth?: number }[], bytesPerToken: number): { bound: number; share: number } | null {
  const read = runs.filter((r) => r.bandwidth !== undefined && r.bandwidth > 0);
  if (!read.length || !(bytesPerToken > 0)) return null;
  return { bound: median(read.map((r) => r.bandwidth! / bytesPerToken)), share: median(read.map((r) => r.tps / (r.bandwidth! / bytesPerToken))) };
}
