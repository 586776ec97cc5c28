// A stored weight: a GGUF tensor in its own storage type, kept as the file's bytes (no copy).

import type { GGUFFile, GGUFTensorInfo } from "../io/gguf/reader.js";
import { typeName } from "../io/gguf/types.js";

export interface Weight {
  name: string;
  /** ggml storage type id (GGMLType). */
  type: number;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  /** Row length (dims[0]): the input width of a matrix. */
  cols: number;
  /** Number of rows (product of the other dims): the output width of a matrix. */
  rows: number;
  bytes: Uint8Array;
}

export function weightFromInfo(file: GGUFFile, info: GGUFTensorInfo): Weight {
  const rows = info.dims.slice(1).reduce((a, b) => a * b, 1);
  return { name: info.name, type: info.type, dims: info.dims, cols: info.dims[0], rows, bytes: file.tensorBytes(info) };
}

export function describeWeight(w: Weight): string {
  return `${w.name} ${typeName(w.type)} [${w.dims.join(", ")}]`;
}

/** Rows [from, to) of a stored matrix, as a weight of its own (no copy): fused QKV, experts. */
export function sliceWeightRows(w: Weight, from: number, to: number, name = `${w.name}[${from}:${to}]`): Weight {
  const rowBytes = w.bytes.byteLength / w.rows;
  return {
    name, type: w.type, dims: [w.cols, to - from], cols: w.cols, rows: to - from,
    bytes: w.bytes.subarray(from * rowBytes, to * rowBytes),
  };
}
