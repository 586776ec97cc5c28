// Trainable float32 copies of a GGUF's tensors, and the checkpoint GGUF written back from them.

import { GGMLType } from "../io/gguf/types.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { writeGGUF, type GGUFWriteSpec } from "../io/gguf/writer.js";
import { dequantize } from "../quant/index.js";
import { weightFromInfo } from "../tensor/weight.js";
import type { Parameters } from "./objectives.js";

/** Every tensor of the file, dequantized to a fresh float32 array (the file is never written). */
export function parametersFromFile(file: GGUFFile): Parameters {
  const values = new Map<string, Float32Array>(), dims = new Map<string, number[]>();
  for (const info of file.tensors) {
    const w = weightFromInfo(file, info);
    values.set(info.name, w.type === GGMLType.F32 ? new Float32Array(w.bytes.slice().buffer, 0, w.rows * w.cols) : dequantize(w));
    dims.set(info.name, [...info.dims]);
  }
  return { values, dims };
}

/**
 * Write the parameters as an F32 GGUF with the source's metadata (tokenizer included) and
 * tensor names, atomically; `extra` metadata entries are added or replaced.
 */
export function writeCheckpoint(path: string, source: GGUFFile, params: Parameters, extra: Record<string, string | number> = {}): void {
  writeGGUF(path, checkpointSpec(source, params, extra));
}

/** What writeCheckpoint writes, to write or to encode in memory (encodeGGUF). */
export function checkpointSpec(source: GGUFFile, params: Parameters, extra: Record<string, string | number> = {}): GGUFWriteSpec {
  const metadata = new Map(source.metadata);
  const metadataTypes = new Map(source.metadataTypes);
  for (const [k, v] of Object.entries(extra)) { metadata.set(k, v); metadataTypes.delete(k); }
  const tensors = source.tensors.map((info) => {
    const v = params.values.get(info.name)!;
    return { name: info.name, dims: params.dims.get(info.name)!, type: GGMLType.F32, bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) };
  });
  return { metadata, metadataTypes, tensors, alignment: source.alignment };
}
