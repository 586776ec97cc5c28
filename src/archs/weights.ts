// Named access to a GGUF's tensors, with errors that say which tensor is missing or malformed.

import { ModelFileError } from "../errors.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { GGMLType } from "../io/gguf/types.js";
import { dequantize } from "../quant/index.js";
import { weightFromInfo, type Weight } from "../tensor/weight.js";

export class ModelWeights {
  constructor(readonly file: GGUFFile) {}

  optional(name: string, dims?: number[]): Weight | undefined {
    const info = this.file.tensor(name);
    if (!info) return undefined;
    if (dims && (dims.length !== info.dims.length || dims.some((d, i) => d !== info.dims[i]))) {
      throw new ModelFileError(`${this.file.path}: tensor ${name} has shape [${info.dims.join(", ")}], expected [${dims.join(", ")}]`);
    }
    return weightFromInfo(this.file, info);
  }

  /** A tensor that must exist, with the given ggml dims when they are known. */
  need(name: string, dims?: number[]): Weight {
    const w = this.optional(name, dims);
    if (!w) throw new ModelFileError(`${this.file.path}: tensor ${name} is missing`);
    return w;
  }

  /** A small tensor (norm weight, bias) as float32: a view when stored as aligned F32. */
  vector(name: string, length: number): Float32Array {
    return toFloat32(this.need(name, [length]));
  }

  optionalVector(name: string, length: number): Float32Array | undefined {
    const w = this.optional(name, [length]);
    return w && toFloat32(w);
  }
}

export function toFloat32(w: Weight): Float32Array {
  if (w.type === GGMLType.F32 && w.bytes.byteOffset % 4 === 0) {
    return new Float32Array(w.bytes.buffer, w.bytes.byteOffset, w.rows * w.cols);
  }
  return dequantize(w);
}
