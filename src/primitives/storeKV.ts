// Store float32 keys or values into a KV cache's rows, in the cache's type; the memory of a cache.

import { kernelsFor } from "../backends/index.js";
import type { Device, KVType } from "../backends/kernels.js";
import type { Tensor } from "../tensor/tensor.js";

/** x's values (whole rows) as `type`, written into dst from byte `byteOffset`. */
export function storeKV(x: Tensor, type: KVType, dst: Uint8Array, byteOffset: number): void {
  kernelsFor(x.device).storeKV(x.data, type, dst, byteOffset);
}

/** storeKV of keys k into kDst and values v into vDst, at the same byte offset (one kernel call
 *  where the backend has the fused one). */
export function storeKVPair(k: Tensor, v: Tensor, type: KVType, kDst: Uint8Array, vDst: Uint8Array, byteOffset: number): void {
  const kernels = kernelsFor(k.device);
  if (kernels.storeKVPair) kernels.storeKVPair(k.data, v.data, type, kDst, vDst, byteOffset);
  else {
    kernels.storeKV(k.data, type, kDst, byteOffset);
    kernels.storeKV(v.data, type, vDst, byteOffset);
  }
}

/** Zeroed bytes for a KV cache on `device`: on huge pages where its backend has them, else an
 *  ordinary buffer. */
export function hugePageBytes(device: Device, bytes: number): Uint8Array {
  return kernelsFor(device).allocHugePages?.(bytes) ?? new Uint8Array(bytes);
}
