// Writing float32 keys or values into a KV cache's storage type (ggml's F16 and Q8_0 encoders).

import { GGMLType } from "../../io/gguf/types.js";
import { quantizeRow } from "../../quant/index.js";
import type { KVType } from "../kernels.js";

const GGML: Record<KVType, GGMLType> = { f32: GGMLType.F32, f16: GGMLType.F16, q8_0: GGMLType.Q8_0 };

export function storeKV(x: Float32Array, type: KVType, dst: Uint8Array, byteOffset: number): void {
  if (type === "f32") new Float32Array(dst.buffer, dst.byteOffset + byteOffset, x.length).set(x);
  else quantizeRow(GGML[type], x, 0, x.length, dst, byteOffset);
}
