// The LoRA adapter file, as llama.cpp reads it (src/llama-adapter.cpp llama_adapter_lora_init_impl,
// src/llama-graph.cpp build_lora_mm / build_inp_embd, tools/export-lora), checked against its code:
//   metadata  general.type = "adapter", adapter.type = "lora", general.architecture = the base
//             model's (llama.cpp refuses a mismatch or a missing one), adapter.lora.alpha (FLOAT32:
//             llama.cpp reads it with gguf_get_val_f32; absent or 0 means scale 1)
//   tensors   for each adapted base tensor NAME of ggml dims [in, out], NAME.lora_a with ggml dims
//             [in, rank] (row-major A [rank, in]) and NAME.lora_b with ggml dims [rank, out]
//             (row-major B [out, rank]), unquantized for tools/export-lora; *_norm.weight tensors are
//             skipped, any other name is an error. (adapter.alora.invocation_tokens marks an
//             activated LoRA, applied only after those tokens: toy refuses it rather than merge it.)
//   math      W x + s · B (A x),  s = alpha / rank per pair, rank = lora_b's ggml dims[0]
//             (times the user's scale: 1 for --lora, SCALE for llama.cpp's --lora-scaled).
//   token_embd.weight (ggml dims [n_embd, n_vocab]) is the exception, A and B flipped: lora_a has
//             ggml dims [rank, n_vocab] and lora_b [rank, n_embd], ΔW[v, e] = s · Σ_r a[v, r] b[e, r].
// In memory every pair is held the same way, A [rank, in] and B [out, rank] with W [out, in].

import { TENSORS } from "../blocks/tensorNames.js";
import { ModelFileError } from "../errors.js";
import { GGUFValueType, parseGGUF, readGGUF, type GGUFFile, type GGUFTensorInfo } from "../io/gguf/reader.js";
import { GGMLType } from "../io/gguf/types.js";
import { encodeGGUF, writeGGUF, type GGUFMetadataEntry, type GGUFTensorData } from "../io/gguf/writer.js";
import { dequantize } from "../quant/index.js";
import { weightFromInfo } from "../tensor/weight.js";

/** One adapted matrix W [rows = out, cols = in]: A [rank, in] and B [out, rank], row-major. */
export interface LoraMatrix {
  a: Float32Array;
  b: Float32Array;
  rows: number;
  cols: number;
  rank: number;
}

export interface LoraAdapter {
  alpha: number;
  /** general.architecture: the base model's. */
  arch: string;
  /** By base tensor name. */
  matrices: Map<string, LoraMatrix>;
}

/** The one tensor whose pair llama.cpp stores flipped (its lookup is a get_rows, not a matmul). */
const EMBEDDING = TENSORS.tokenEmbd;

/** llama.cpp's scale: alpha / rank, and 1 when alpha is 0 (or absent). */
export const loraScale = (alpha: number, rank: number): number => (alpha !== 0 && rank > 0 ? alpha / rank : 1);

/** [rows, cols] row-major → [cols, rows]. */
export function transpose(x: Float32Array, rows: number, cols: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) y[c * rows + r] = x[r * cols + c];
  return y;
}

/** W + s · B A for W [out, in] row-major, A [rank, in], B [out, rank]. */
export function mergeLowRank(w: Float32Array, a: Float32Array, b: Float32Array, out: number, inn: number, rank: number, s: number): Float32Array {
  const merged = new Float32Array(w.length);
  for (let o = 0; o < out; o++) {
    for (let i = 0; i < inn; i++) {
      let sum = 0;
      for (let r = 0; r < rank; r++) sum += b[o * rank + r] * a[r * inn + i];
      merged[o * inn + i] = w[o * inn + i] + s * sum;
    }
  }
  return merged;
}

function float32Of(file: GGUFFile, info: GGUFTensorInfo): Float32Array {
  const w = weightFromInfo(file, info);
  return w.type === GGMLType.F32 ? new Float32Array(w.bytes.slice().buffer, 0, w.rows * w.cols) : dequantize(w);
}

/** Read a llama.cpp LoRA adapter GGUF, with the checks llama.cpp's loader makes. */
export function readLoraAdapter(path: string): LoraAdapter {
  const file = readGGUF(path);
  const meta = (k: string) => file.metadata.get(k);
  if (meta("general.type") !== "adapter" || meta("adapter.type") !== "lora") {
    throw new ModelFileError(`${path}: not a LoRA adapter (general.type = "adapter", adapter.type = "lora" expected)`);
  }
  // An activated LoRA applies only after its invocation tokens; merging it would apply it everywhere.
  if (meta("adapter.alora.invocation_tokens") !== undefined) throw new ModelFileError(`${path}: an activated LoRA (adapter.alora.invocation_tokens), which toy cannot apply`);
  const pairs = new Map<string, { a?: GGUFTensorInfo; b?: GGUFTensorInfo }>();
  for (const info of file.tensors) {
    const m = /^(.*)\.lora_([ab])$/.exec(info.name);
    if (!m) {
      if (info.name.endsWith("_norm.weight")) continue; // llama.cpp skips these too
      throw new ModelFileError(`${path}: tensor ${info.name} is neither a .lora_a nor a .lora_b`);
    }
    const pair = pairs.get(m[1]) ?? {};
    pair[m[2] as "a" | "b"] = info;
    pairs.set(m[1], pair);
  }
  const matrices: LoraAdapter["matrices"] = new Map();
  for (const [base, { a, b }] of pairs) {
    if (!a || !b) throw new ModelFileError(`${path}: ${base} has a .lora_${a ? "a" : "b"} but no .lora_${a ? "b" : "a"}`);
    if (a.dims.length !== 2 || b.dims.length !== 2) throw new ModelFileError(`${path}: ${base}: only 2-D LoRA pairs are supported (lora_a is [${a.dims.join(", ")}], lora_b [${b.dims.join(", ")}])`);
    const av = float32Of(file, a), bv = float32Of(file, b);
    if (base === EMBEDDING) {
      // lora_a [rank, n_vocab] is B [out = vocab, rank]; lora_b [rank, n_embd] is Aᵀ.
      const [rank, vocab] = a.dims, [rank2, embd] = b.dims;
      if (rank !== rank2) throw new ModelFileError(`${path}: ${base}: lora_a rank ${rank} differs from lora_b rank ${rank2}`);
      matrices.set(base, { a: transpose(bv, embd, rank), b: av, rows: vocab, cols: embd, rank });
    } else {
      const [inn, rank] = a.dims, [rank2, out] = b.dims;
      if (rank !== rank2) throw new ModelFileError(`${path}: ${base}: lora_a is [${a.dims.join(", ")}] and lora_b [${b.dims.join(", ")}]; lora_a's dims[1] must be lora_b's dims[0] (the rank)`);
      matrices.set(base, { a: av, b: bv, rows: out, cols: inn, rank });
    }
  }
  return { alpha: Number(meta("adapter.lora.alpha") ?? 0), arch: String(meta("general.architecture") ?? ""), matrices };
}

/** Write an adapter in llama.cpp's layout (F32 tensors). */
export function writeLoraAdapter(path: string, adapter: LoraAdapter, name: string): void {
  const tensors: GGUFTensorData[] = [];
  const f32 = (x: Float32Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  for (const [base, m] of adapter.matrices) {
    if (base === EMBEDDING) {
      tensors.push({ name: `${base}.lora_a`, dims: [m.rank, m.rows], type: GGMLType.F32, bytes: f32(m.b) });
      tensors.push({ name: `${base}.lora_b`, dims: [m.rank, m.cols], type: GGMLType.F32, bytes: f32(transpose(m.a, m.rank, m.cols)) });
    } else {
      tensors.push({ name: `${base}.lora_a`, dims: [m.cols, m.rank], type: GGMLType.F32, bytes: f32(m.a) });
      tensors.push({ name: `${base}.lora_b`, dims: [m.rank, m.rows], type: GGMLType.F32, bytes: f32(m.b) });
    }
  }
  const metadata: GGUFMetadataEntry[] = [
    ["general.architecture", adapter.arch],
    ["general.type", "adapter"],
    ["general.name", name],
    ["adapter.type", "lora"],
    ["adapter.lora.alpha", adapter.alpha, GGUFValueType.FLOAT32],
    ["general.file_type", 0, GGUFValueType.UINT32],
  ];
  writeGGUF(path, { metadata, tensors });
}

/**
 * The base model with an adapter merged into its matrices, W + scale · (alpha / rank) · B A
 * (dequantized to F32; every other tensor kept as stored), as an in-memory GGUF: what
 * `toy infer --lora` and `toy eval --lora` load.
 */
export function applyLoraAdapter(base: GGUFFile, adapterPath: string, scale = 1): GGUFFile {
  const ad = readLoraAdapter(adapterPath);
  const arch = String(base.metadata.get("general.architecture") ?? "");
  if (ad.arch !== arch) throw new ModelFileError(`${adapterPath}: an adapter for ${ad.arch ? `architecture ${ad.arch}` : "no architecture (general.architecture is missing)"}, the model is ${arch}`);
  for (const name of ad.matrices.keys()) if (!base.tensor(name)) throw new ModelFileError(`${adapterPath}: adapts ${name}, which the model does not have`);
  const tensors: GGUFTensorData[] = base.tensors.map((info) => {
    const m = ad.matrices.get(info.name);
    if (!m) return { name: info.name, dims: [...info.dims], type: info.type, bytes: base.tensorBytes(info) };
    if (info.dims.length !== 2 || info.dims[0] !== m.cols || info.dims[1] !== m.rows) {
      throw new ModelFileError(`${adapterPath}: ${info.name} is [${info.dims.join(", ")}], the adapter is for [${m.cols}, ${m.rows}]`);
    }
    const merged = mergeLowRank(float32Of(base, info), m.a, m.b, m.rows, m.cols, m.rank, scale * loraScale(ad.alpha, m.rank));
    return { name: info.name, dims: [...info.dims], type: GGMLType.F32, bytes: new Uint8Array(merged.buffer) };
  });
  const bytes = encodeGGUF({ metadata: base.metadata, metadataTypes: base.metadataTypes, tensors, alignment: base.alignment });
  return parseGGUF(bytes, base.path);
}
