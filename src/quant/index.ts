// The storage types of ggml, in TypeScript: dequantize rows to float32 (the inner loop of the
// ts backend's matmul) and quantize float32 rows with ggml's reference quantizers (used by the
// GGUF writer, the benchmark's random models and training checkpoints).

import { GGMLType, TYPE_TRAITS, byteSize, typeName } from "../io/gguf/types.js";
import type { Weight } from "../tensor/weight.js";
import { dequantizeBF16, dequantizeF16, dequantizeF32, quantizeBF16, quantizeF16, quantizeF32 } from "./float.js";
import {
  dequantizeQ4_0, dequantizeQ4_1, dequantizeQ5_0, dequantizeQ5_1, dequantizeQ8_0, dequantizeQ8_1,
  quantizeQ4_0, quantizeQ4_1, quantizeQ5_0, quantizeQ5_1, quantizeQ8_0, quantizeQ8_1,
} from "./legacy.js";
import {
  dequantizeQ2_K, dequantizeQ3_K, dequantizeQ4_K, dequantizeQ5_K, dequantizeQ6_K, dequantizeQ8_K,
  quantizeQ2_K, quantizeQ3_K, quantizeQ4_K, quantizeQ5_K, quantizeQ6_K,
} from "./kquants.js";
import { dequantizeIQ4_NL, dequantizeIQ4_XS, quantizeIQ4_NL, quantizeIQ4_XS } from "./iq4.js";

export * from "./fp16.js";

/** Decode n values from src (starting at byte o) into out[p, p+n). n is a multiple of the block size. */
export type RowDequantizer = (src: Uint8Array, o: number, n: number, out: Float32Array, p: number) => void;
/** Encode x[p, p+n) into dst starting at byte o. n is a multiple of the block size. */
export type RowQuantizer = (x: Float32Array, p: number, n: number, dst: Uint8Array, o: number) => void;

const DEQUANTIZERS = new Map<number, RowDequantizer>([
  [GGMLType.F32, dequantizeF32],
  [GGMLType.F16, dequantizeF16],
  [GGMLType.BF16, dequantizeBF16],
  [GGMLType.Q4_0, dequantizeQ4_0],
  [GGMLType.Q4_1, dequantizeQ4_1],
  [GGMLType.Q5_0, dequantizeQ5_0],
  [GGMLType.Q5_1, dequantizeQ5_1],
  [GGMLType.Q8_0, dequantizeQ8_0],
  [GGMLType.Q8_1, dequantizeQ8_1],
  [GGMLType.Q2_K, dequantizeQ2_K],
  [GGMLType.Q3_K, dequantizeQ3_K],
  [GGMLType.Q4_K, dequantizeQ4_K],
  [GGMLType.Q5_K, dequantizeQ5_K],
  [GGMLType.Q6_K, dequantizeQ6_K],
  [GGMLType.Q8_K, dequantizeQ8_K],
  [GGMLType.IQ4_NL, dequantizeIQ4_NL],
  [GGMLType.IQ4_XS, dequantizeIQ4_XS],
]);

const QUANTIZERS = new Map<number, RowQuantizer>([
  [GGMLType.F32, quantizeF32],
  [GGMLType.F16, quantizeF16],
  [GGMLType.BF16, quantizeBF16],
  [GGMLType.Q4_0, quantizeQ4_0],
  [GGMLType.Q4_1, quantizeQ4_1],
  [GGMLType.Q5_0, quantizeQ5_0],
  [GGMLType.Q5_1, quantizeQ5_1],
  [GGMLType.Q8_0, quantizeQ8_0],
  [GGMLType.Q8_1, quantizeQ8_1],
  [GGMLType.Q2_K, quantizeQ2_K],
  [GGMLType.Q3_K, quantizeQ3_K],
  [GGMLType.Q4_K, quantizeQ4_K],
  [GGMLType.Q5_K, quantizeQ5_K],
  [GGMLType.Q6_K, quantizeQ6_K],
  [GGMLType.IQ4_NL, quantizeIQ4_NL],
  [GGMLType.IQ4_XS, quantizeIQ4_XS],
]);

/** The storage types this module can decode. */
export const DEQUANTIZABLE_TYPES: readonly number[] = [...DEQUANTIZERS.keys()];
/** The storage types this module can encode. */
export const QUANTIZABLE_TYPES: readonly number[] = [...QUANTIZERS.keys()];

/** Values per block of `type`. */
export function blockSize(type: number): number {
  const t = TYPE_TRAITS.get(type);
  if (!t) throw new Error(`unknown ggml type ${type}`);
  return t.blockSize;
}

/** Bytes taken by one row of n values of `type`. */
export function rowBytes(type: number, n: number): number {
  checkBlocks(type, n);
  return byteSize(type, n);
}

function checkBlocks(type: number, n: number): void {
  const bs = blockSize(type);
  if (!Number.isInteger(n) || n < 0 || n % bs !== 0) {
    throw new RangeError(`${typeName(type)}: ${n} values is not a whole number of ${bs}-value blocks`);
  }
}

/** The row decoder of `type`, for loops that decode many rows (no look-up, no checks). */
export function dequantizer(type: number): RowDequantizer {
  const fn = DEQUANTIZERS.get(type);
  if (!fn) throw new Error(`cannot dequantize ${typeName(type)}`);
  return fn;
}

/** The row encoder of `type`. */
export function quantizer(type: number): RowQuantizer {
  const fn = QUANTIZERS.get(type);
  if (!fn) throw new Error(`cannot quantize to ${typeName(type)}`);
  return fn;
}

/** Decode n values of `type` from src (starting at byte srcOffset) into out[outOffset, outOffset+n). */
export function dequantizeRow(type: number, src: Uint8Array, srcOffset: number, n: number,
                              out: Float32Array, outOffset = 0): void {
  const fn = dequantizer(type);
  const bytes = rowBytes(type, n);
  if (srcOffset < 0 || srcOffset + bytes > src.length) {
    throw new RangeError(`${typeName(type)}: ${n} values need bytes [${srcOffset}, ${srcOffset + bytes}) of ${src.length}`);
  }
  if (outOffset < 0 || outOffset + n > out.length) {
    throw new RangeError(`${typeName(type)}: ${n} values do not fit at ${outOffset} in an output of ${out.length}`);
  }
  fn(src, srcOffset, n, out, outOffset);
}

/** Encode src[srcOffset, srcOffset+n) as `type` into dst starting at byte dstOffset. */
export function quantizeRow(type: number, src: Float32Array, srcOffset: number, n: number,
                            dst: Uint8Array, dstOffset: number): void {
  const fn = quantizer(type);
  const bytes = rowBytes(type, n);
  if (srcOffset < 0 || srcOffset + n > src.length) {
    throw new RangeError(`${typeName(type)}: values [${srcOffset}, ${srcOffset + n}) outside an input of ${src.length}`);
  }
  if (dstOffset < 0 || dstOffset + bytes > dst.length) {
    throw new RangeError(`${typeName(type)}: ${bytes} bytes do not fit at ${dstOffset} in an output of ${dst.length}`);
  }
  fn(src, srcOffset, n, dst, dstOffset);
}

/** A whole stored tensor as float32, in ggml order (row r is out[r·cols, (r+1)·cols)). */
export function dequantize(weight: Weight): Float32Array {
  const n = weight.rows * weight.cols;
  const out = new Float32Array(n);
  dequantizeRow(weight.type, weight.bytes, 0, n, out, 0);
  return out;
}

/** A rows × cols float32 matrix (row-major) as the bytes of `type`, row after row. */
export function quantize(type: number, data: Float32Array, rows: number, cols: number): Uint8Array {
  if (data.length !== rows * cols) throw new RangeError(`quantize: ${data.length} values for ${rows} × ${cols}`);
  const fn = quantizer(type);
  const stride = rowBytes(type, cols);
  const dst = new Uint8Array(rows * stride);
  for (let r = 0; r < rows; r++) fn(data, r * cols, cols, dst, r * stride);
  return dst;
}
