// lora: low-rank adapters on a frozen GGUF (Hu et al. 2021). For each target matrix W [out, in]
//   W' = W + (alpha / rank) · B A,   A: [rank, in] ~ U(−1/√in, 1/√in) (seeded),  B: [out, rank] = 0
// so training starts at the base model. Only A and B train.
// The adapter is saved in llama.cpp's LoRA GGUF format: general.type = "adapter",
// adapter.type = "lora", adapter.lora.alpha, and for each target the tensors
// `<name>.weight.lora_a` (ggml dims [in, rank]) and `<name>.weight.lora_b` (ggml dims [rank, out]).
// Inside the trainer A is kept transposed (Aᵀ: ggml dims [rank, in]), so B A = linear(B, Aᵀ).

import { configOf } from "../archs/index.js";
import { DEFAULT_TRAIN_OPTIONS, Trainer, trainKernels, type RunOptions, type TrainOptions } from "../engines/train.js";
import { Rng } from "../engines/rng.js";
import type { Adapter, Parameters } from "../engines/trainForward.js";
import { parametersFromFile, writeCheckpoint } from "../engines/trainParams.js";
import { ModelFileError, UsageError } from "../errors.js";
import { GGUFValueType, parseGGUF, readGGUF, type GGUFFile } from "../io/gguf/reader.js";
import { GGMLType } from "../io/gguf/types.js";
import { encodeGGUF, writeGGUF, type GGUFMetadataEntry, type GGUFTensorData } from "../io/gguf/writer.js";
import { dequantize } from "../quant/index.js";
import { weightFromInfo } from "../tensor/weight.js";
import type { RealizedRun } from "./warmStart.js";

export const DEFAULT_LORA_TARGETS = ["attn_q", "attn_v"] as const;

export type LoraOptions = RunOptions & {
  rank: number;
  alpha: number;
  /** Matrix names without `blk.N.` and `.weight` (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, …). */
  targets: readonly string[];
  /** Start from this adapter file instead of fresh A, B (resuming). */
  adapter?: string;
};

/** A loaded adapter: for each base tensor, A [rank, in] and B [out, rank] row-major. */
export interface LoraAdapter {
  alpha: number;
  rank: number;
  arch: string;
  matrices: Map<string, { a: Float32Array; b: Float32Array; rows: number; cols: number }>;
}

export interface LoraRun extends RealizedRun {
  /** The base tensors adapted, by GGUF name. */
  readonly targets: string[];
  readonly scale: number;
  /** Write the adapter (llama.cpp LoRA GGUF). */
  save(path: string): void;
  /** Write base + adapter merged as an F32 GGUF. */
  saveMerged(path: string): void;
}

function transpose(x: Float32Array, rows: number, cols: number): Float32Array {
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

/** Read a llama.cpp LoRA adapter GGUF. */
export function readLoraAdapter(path: string): LoraAdapter {
  const file = readGGUF(path);
  if (file.metadata.get("general.type") !== "adapter" || file.metadata.get("adapter.type") !== "lora") {
    throw new ModelFileError(`${path}: not a LoRA adapter (general.type = "adapter", adapter.type = "lora" expected)`);
  }
  const matrices: LoraAdapter["matrices"] = new Map();
  let rank = 0;
  for (const info of file.tensors) {
    if (!info.name.endsWith(".lora_a")) continue;
    const base = info.name.slice(0, -".lora_a".length);
    const bInfo = file.tensor(`${base}.lora_b`);
    if (!bInfo) throw new ModelFileError(`${path}: ${info.name} has no ${base}.lora_b`);
    const [inn, r] = info.dims, [r2, out] = bInfo.dims;
    if (r !== r2) throw new ModelFileError(`${path}: ${base}: lora_a rank ${r} differs from lora_b rank ${r2}`);
    const f32 = (i: typeof info) => { const w = weightFromInfo(file, i); return w.type === GGMLType.F32 ? new Float32Array(w.bytes.slice().buffer, 0, w.rows * w.cols) : dequantize(w); };
    matrices.set(base, { a: f32(info), b: f32(bInfo), rows: out, cols: inn });
    rank = r;
  }
  const alpha = Number(file.metadata.get("adapter.lora.alpha") ?? rank);
  return { alpha, rank, arch: String(file.metadata.get("general.architecture") ?? ""), matrices };
}

/** llama.cpp's scale: alpha / rank (alpha 0: 1). */
export const loraScale = (alpha: number, rank: number): number => (alpha !== 0 && rank > 0 ? alpha / rank : 1);

/**
 * The base model with an adapter merged into its target matrices (dequantized to F32; every other
 * tensor kept as stored), as an in-memory GGUF: what `toy infer --lora` loads.
 */
export function applyLoraAdapter(base: GGUFFile, adapterPath: string): GGUFFile {
  const ad = readLoraAdapter(adapterPath);
  const arch = base.metadata.get("general.architecture");
  if (ad.arch && arch && ad.arch !== arch) throw new ModelFileError(`${adapterPath}: an adapter for ${ad.arch}, the model is ${arch}`);
  const s = loraScale(ad.alpha, ad.rank);
  for (const name of ad.matrices.keys()) if (!base.tensor(name)) throw new ModelFileError(`${adapterPath}: adapts ${name}, which the model does not have`);
  const tensors: GGUFTensorData[] = base.tensors.map((info) => {
    const m = ad.matrices.get(info.name);
    if (!m) return { name: info.name, dims: [...info.dims], type: info.type, bytes: base.tensorBytes(info) };
    if (info.dims[0] !== m.cols || info.dims[1] !== m.rows) throw new ModelFileError(`${adapterPath}: ${info.name} is [${info.dims.join(", ")}], the adapter is for [${m.cols}, ${m.rows}]`);
    const w = weightFromInfo(base, info);
    const wf = w.type === GGMLType.F32 ? new Float32Array(w.bytes.slice().buffer, 0, w.rows * w.cols) : dequantize(w);
    const merged = mergeLowRank(wf, m.a, m.b, m.rows, m.cols, ad.rank, s);
    return { name: info.name, dims: [...info.dims], type: GGMLType.F32, bytes: new Uint8Array(merged.buffer) };
  });
  const bytes = encodeGGUF({ metadata: base.metadata, metadataTypes: base.metadataTypes, tensors, alignment: base.alignment });
  return parseGGUF(bytes, base.path);
}

export const lora = {
  name: "lora",
  realize(model: string | GGUFFile, options: LoraOptions): LoraRun {
    const { rank, alpha, targets: targetNames, adapter, backend, ...train } = options;
    if (!(rank >= 1)) throw new UsageError(`lora: rank must be at least 1, got ${rank}`);
    const trainOptions: TrainOptions = { ...DEFAULT_TRAIN_OPTIONS, ...train };
    const source = typeof model === "string" ? readGGUF(model) : model;
    const config = configOf(source);
    const params: Parameters = parametersFromFile(source);
    const frozen = new Set(params.values.keys());
    const want = new Set(targetNames);
    const targets = source.tensors.filter((t) => {
      const m = /^blk\.\d+\.(.+)\.weight$/.exec(t.name);
      return m !== null && want.has(m[1]) && t.dims.length === 2;
    }).map((t) => t.name);
    const found = new Set(targets.map((t) => /^blk\.\d+\.(.+)\.weight$/.exec(t)![1]));
    const missing = [...want].filter((t) => !found.has(t));
    if (missing.length) throw new UsageError(`lora: no matrices named ${missing.join(", ")} in the model (try attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down)`);
    const scale = loraScale(alpha, rank);
    const loaded = adapter ? readLoraAdapter(adapter) : undefined;
    if (loaded && loaded.rank !== rank) throw new UsageError(`lora: the adapter ${adapter} has rank ${loaded.rank}, not ${rank}`);
    const rng = new Rng(trainOptions.seed);
    const adapters = new Map<string, Adapter>();
    for (const name of targets) {
      const [inn, out] = params.dims.get(name)!;
      let a: Float32Array, b: Float32Array; // A [rank, in], B [out, rank]
      const got = loaded?.matrices.get(name);
      if (got) { a = got.a; b = got.b; } else {
        const bound = 1 / Math.sqrt(inn);
        a = new Float32Array(rank * inn).map(() => (2 * rng.next() - 1) * bound);
        b = new Float32Array(out * rank);
      }
      const at = `${name}.lora_at`, bn = `${name}.lora_b`;
      params.values.set(at, transpose(a, rank, inn)); params.dims.set(at, [rank, inn]);
      params.values.set(bn, b); params.dims.set(bn, [rank, out]);
      adapters.set(name, { a: at, b: bn, scale });
    }
    const trainer = new Trainer(config, params, trainOptions, { frozen, adapters, kernels: trainKernels(backend) });
    const factors = (name: string) => {
      const [inn, out] = params.dims.get(name)!;
      return { inn, out, a: transpose(params.values.get(`${name}.lora_at`)!, inn, rank), b: params.values.get(`${name}.lora_b`)! };
    };
    return {
      source, config, params, trainer, targets, scale,
      step: (batch) => trainer.step(batch),
      save(path) {
        const tensors: GGUFTensorData[] = [];
        for (const name of targets) {
          const { inn, out, a, b } = factors(name);
          tensors.push({ name: `${name}.lora_a`, dims: [inn, rank], type: GGMLType.F32, bytes: new Uint8Array(a.buffer) });
          tensors.push({ name: `${name}.lora_b`, dims: [rank, out], type: GGMLType.F32, bytes: new Uint8Array(b.buffer, b.byteOffset, b.byteLength) });
        }
        const metadata: GGUFMetadataEntry[] = [
          ["general.architecture", String(source.metadata.get("general.architecture"))],
          ["general.type", "adapter"],
          ["general.name", `${String(source.metadata.get("general.name") ?? "model")} LoRA`],
          ["adapter.type", "lora"],
          ["adapter.lora.alpha", alpha, GGUFValueType.FLOAT32],
          ["general.file_type", 0, GGUFValueType.UINT32],
        ];
        writeGGUF(path, { metadata, tensors });
      },
      saveMerged(path) {
        const merged: Parameters = { values: new Map(), dims: new Map() };
        for (const info of source.tensors) {
          const w = params.values.get(info.name)!;
          merged.dims.set(info.name, params.dims.get(info.name)!);
          if (!adapters.has(info.name)) { merged.values.set(info.name, w); continue; }
          const { inn, out, a, b } = factors(info.name);
          merged.values.set(info.name, mergeLowRank(w, a, b, out, inn, rank, scale));
        }
        writeCheckpoint(path, source, merged, { "general.file_type": 0 });
      },
    };
  },
};
