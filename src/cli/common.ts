// What the commands share: opening a model, parsing numbers and id lists, printing JSON.

import { InvalidArgumentError } from "commander";
import { loadModelFromFile, type LanguageModel } from "../archs/index.js";
import type { KVType } from "../blocks/kvCacheTypes.js";
import { selectBackend } from "../backends/index.js";
import { UsageError } from "../errors.js";
import { readGGUF } from "../io/gguf/reader.js";
import { tokenizerFromMetadata, type Tokenizer } from "../io/tokenizer/index.js";
import { resolveModelPath } from "../io/discovery/modelNames.js";
import { applyLoraAdapter } from "../recipes/loraAdapter.js";

export interface BackendFlags {
  backend?: string;
  threads?: number;
  /** A LoRA adapter GGUF to merge into the model at load time. */
  lora?: string;
  /** KV-cache storage type (--cache-type). */
  cacheType?: KVType;
}

export interface OpenedModel {
  model: LanguageModel;
  tokenizer: Tokenizer;
  path: string;
}

export function openModel(spec: string, flags: BackendFlags, quiet = false): OpenedModel {
  const device = selectBackend(flags.backend, { threads: flags.threads ?? envThreads(), quiet });
  const path = resolveModelPath(spec);
  const file = flags.lora ? applyLoraAdapter(readGGUF(path), flags.lora) : readGGUF(path);
  const model = loadModelFromFile(file, device, undefined, { cacheType: flags.cacheType });
  const tokenizer = tokenizerFromMetadata(file.metadata, path);
  return { model, tokenizer, path };
}

function envThreads(): number | undefined {
  const t = process.env.TOY_THREADS;
  return t ? Number(t) : undefined;
}

export function int(name: string, min = 0) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be a whole number >= ${min}, got "${value}"`);
    return n;
  };
}

export function float(name: string, min = -Infinity, max = Infinity) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}, got "${value}"`);
    }
    return n;
  };
}

/** "1,2,3" → [1, 2, 3] */
export function idList(value: string): number[] {
  const ids = value.split(",").map((s) => s.trim()).filter((s) => s !== "").map(Number);
  if (ids.length === 0 || ids.some((n) => !Number.isInteger(n) || n < 0)) {
    throw new InvalidArgumentError(`--ids must be a comma-separated list of token ids, got "${value}"`);
  }
  return ids;
}

export function checkIds(ids: number[], nVocab: number): void {
  const bad = ids.find((id) => id >= nVocab);
  if (bad !== undefined) throw new UsageError(`token id ${bad} is outside the vocabulary (0..${nVocab - 1})`);
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + "\n");
}

/** Round for JSON output without losing float32 precision. */
export const f32 = (x: number): number => Math.fround(x);
