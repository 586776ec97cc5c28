// Named access to a GGUF's tensors, with errors that say which tensor is missing or malformed.
// As the inference ops' StoredWeights: matrices stay in their storage type; vectors (norm
// weights, biases) are float32; every lookup is kept, so a decode step only reads maps.

import type { StoredWeights } from "../blocks/inferenceOps.js";
import { ModelFileError } from "../errors.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { GGMLType } from "../io/gguf/types.js";
import { dequantize } from "../quant/index.js";
import { sliceWeightRows, weightFromInfo, type Weight } from "../tensor/weight.js";
import type { TensorSpec } from "./layers.js";

export class ModelWeights implements StoredWeights {
  private readonly matrices = new Map<string, Weight>();
  private readonly vectors = new Map<string, Float32Array>();
  private readonly slices = new Map<string, Map<number, Weight>>();

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

  /** Check that every tensor a forward reads is there with its dims (at load, not mid-forward). */
  check(specs: readonly TensorSpec[]): void {
    for (const s of specs) {
      if (s.optional) this.optional(s.name, s.dims);
      else this.need(s.name, s.dims);
    }
  }

  has(name: string): boolean {
    return this.file.tensor(name) !== undefined;
  }

  matrix(name: string, rows?: readonly [number, number]): Weight {
    let w = this.matrices.get(name);
    if (!w) this.matrices.set(name, (w = this.need(name)));
    if (!rows) return w;
    let byStart = this.slices.get(name);
    if (!byStart) this.slices.set(name, (byStart = new Map()));
    let s = byStart.get(rows[0]);
    if (!s) byStart.set(rows[0], (s = { ...sliceWeightRows(w, rows[0], rows[1]), dims: [w.cols, rows[1] - rows[0]] }));
    return s;
  }

  vector(name: string): Float32Array {
    let v = this.vectors.get(name);
    if (!v) this.vectors.set(name, (v = toFloat32(this.matrix(name))));
    return v;
  }
}

export function toFloat32(w: Weight): Float32Array {
  if (w.type === GGMLType.F32 && w.bytes.byteOffset % 4 === 0) {
    return new Float32Array(w.bytes.buffer, w.bytes.byteOffset, w.rows * w.cols);
  }
  return dequantize(w);
}
