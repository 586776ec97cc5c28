// The storage types of a KV cache (llama.cpp's --cache-type-k/v): their names, defaults, and how
// many bytes a cached row takes.

import type { KVType } from "../backends/kernels.js";
import { ToyError, EXIT } from "../errors.js";

export type { KVType } from "../backends/kernels.js";

export const KV_TYPES: readonly KVType[] = ["f32", "f16", "q8_0"];

/**
 * The type a cache gets when none is asked for. The library keeps float32, the exact numerics
 * the conformance references were made with; the command line (`--cache-type`) defaults to F16,
 * as llama.cpp does: half the memory and memory traffic, ~1e-3 relative error on K and V.
 */
export const DEFAULT_KV_TYPE: KVType = "f32";
export const CLI_DEFAULT_KV_TYPE: KVType = "f16";

/** Bytes of one cached row of `width` values. */
export function kvRowBytes(type: KVType, width: number): number {
  return type === "f32" ? width * 4 : type === "f16" ? width * 2 : (width / 32) * 34;
}

/** Check that heads of `headDim` values can be stored as `type` (Q8_0 blocks never straddle two heads). */
export function checkKVType(type: string, headDim: number): KVType {
  if (!(KV_TYPES as readonly string[]).includes(type)) {
    throw new ToyError(`unknown KV cache type "${type}": expected one of ${KV_TYPES.join(", ")}`, EXIT.usage);
  }
  if (type === "q8_0" && headDim % 32 !== 0) {
    throw new ToyError(`KV cache type q8_0 needs a head size that is a multiple of 32; this model's is ${headDim} (use f16 or f32)`, EXIT.usage);
  }
  return type as KVType;
}
