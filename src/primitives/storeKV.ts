// Store float32 keys or values into a KV cache's rows, in the cache's type.

import { kernelsFor } from "../backends/index.js";
import type { KVType } from "../backends/kernels.js";
import type { Tensor } from "../tensor/tensor.js";

/** x's values (whole rows) as `type`, written into dst from byte `byteOffset`. */
export function storeKV(x: Tensor, type: KVType, dst: Uint8Array, byteOffset: number): void {
  kernelsFor(x.device).storeKV(x.data, type, dst, byteOffset);
}
