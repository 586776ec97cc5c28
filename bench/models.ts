// Benchmark models: the shape of SmolLM2-135M (576 wide, 30 layers, 9 heads, 3 KV heads, FFN 1536,
// vocabulary 49152, tied embeddings) with seeded random weights, written with toy's own GGUF
// writer and quantizer in F32, Q8_0, Q4_0 and Q4_K_M. Files are cached in .bench/models.

import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { GGMLType } from "../src/io/gguf/types.js";
import { writeGGUF, type GGUFMetadataEntry, type GGUFTensorData } from "../src/io/gguf/writer.js";
import { GGUFValueType } from "../src/io/gguf/reader.js";
import { quantize } from "../src/quant/index.js";
import { Rng } from "../src/data/rng.js";

export const SMOL_SHAPE = { nEmbd: 576, nLayer: 30, nHead: 9, nKVHead: 3, nFF: 1536, nVocab: 49152, ctx: 2048 };
export type BenchType = "F32" | "Q8_0" | "Q4_0" | "Q4_K_M";
export const BENCH_TYPES: BenchType[] = ["F32", "Q8_0", "Q4_0", "Q4_K_M"];

const FILE_TYPE: Record<BenchType, number> = { F32: 0, Q8_0: 7, Q4_0: 2, Q4_K_M: 15 };

/** llama.cpp's Q4_K_M mix: Q6_K for the output/embedding and for attn_v and ffn_down in the
 *  first and last eighth of the layers and every third layer between; Q4_K elsewhere. Rows whose
 *  length is not a multiple of 256 cannot hold K-quants: llama.cpp falls back to Q5_0 for Q4_K
 *  and Q8_0 for Q6_K there (most of a 576-wide model; ffn_down's 1536-wide rows keep K-quants). */
function tensorType(type: BenchType, name: string, layer: number, nLayer: number, cols: number): number {
  if (type === "F32") return GGMLType.F32;
  if (type === "Q8_0") return GGMLType.Q8_0;
  if (type === "Q4_0") return name === "token_embd.weight" ? GGMLType.Q8_0 : GGMLType.Q4_0;
  const moreBits = layer < nLayer / 8 || layer >= (7 * nLayer) / 8 || (layer - Math.floor(nLayer / 8)) % 3 === 2;
  const six = name === "token_embd.weight" || ((name.endsWith("attn_v.weight") || name.endsWith("ffn_down.weight")) && moreBits);
  if (cols % 256 !== 0) return six ? GGMLType.Q8_0 : GGMLType.Q5_0;
  return six ? GGMLType.Q6_K : GGMLType.Q4_K;
}

export function benchModelPath(dir: string, type: BenchType): string {
  return join(dir, `smollm2-shape-${type}.gguf`);
}

export function ensureBenchModel(dir: string, type: BenchType, log: (s: string) => void): string {
  const path = benchModelPath(dir, type);
  if (existsSync(path)) return path;
  mkdirSync(dir, { recursive: true });
  log(`generating ${path} (random weights, seed 1234) ...`);
  const s = SMOL_SHAPE;
  const rng = new Rng(1234);
  const hd = s.nEmbd / s.nHead;
  const tensors: GGUFTensorData[] = [];
  const matrix = (name: string, cols: number, rows: number, layer: number, std: number) => {
    const data = new Float32Array(rows * cols);
    for (let i = 0; i < data.length; i++) data[i] = rng.normal() * std;
    const t = tensorType(type, name, layer, s.nLayer, cols);
    tensors.push({ name, dims: [cols, rows], type: t, bytes: t === GGMLType.F32 ? new Uint8Array(data.buffer) : quantize(t, data, rows, cols) });
  };
  const vector = (name: string, n: number) => {
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = 1 + 0.1 * rng.normal();
    tensors.push({ name, dims: [n], type: GGMLType.F32, bytes: new Uint8Array(data.buffer) });
  };
  matrix("token_embd.weight", s.nEmbd, s.nVocab, 0, 0.02);
  for (let l = 0; l < s.nLayer; l++) {
    const b = `blk.${l}`;
    vector(`${b}.attn_norm.weight`, s.nEmbd);
    matrix(`${b}.attn_q.weight`, s.nEmbd, s.nEmbd, l, 0.05);
    matrix(`${b}.attn_k.weight`, s.nEmbd, s.nKVHead * hd, l, 0.05);
    matrix(`${b}.attn_v.weight`, s.nEmbd, s.nKVHead * hd, l, 0.05);
    matrix(`${b}.attn_output.weight`, s.nEmbd, s.nEmbd, l, 0.05);
    vector(`${b}.ffn_norm.weight`, s.nEmbd);
    matrix(`${b}.ffn_gate.weight`, s.nEmbd, s.nFF, l, 0.05);
    matrix(`${b}.ffn_up.weight`, s.nEmbd, s.nFF, l, 0.05);
    matrix(`${b}.ffn_down.weight`, s.nFF, s.nEmbd, l, 0.05);
  }
  vector("output_norm.weight", s.nEmbd);
  const tokens = Array.from({ length: s.nVocab }, (_, i) => (i < 3 ? ["<unk>", "<s>", "</s>"][i] : i < 259 ? `<0x${(i - 3).toString(16).toUpperCase().padStart(2, "0")}>` : `<t${i}>`));
  const metadata: GGUFMetadataEntry[] = [
    ["general.architecture", "llama"],
    ["general.name", `smollm2-shape-${type}`],
    ["general.file_type", FILE_TYPE[type], GGUFValueType.UINT32],
    ["llama.context_length", s.ctx], ["llama.embedding_length", s.nEmbd], ["llama.block_count", s.nLayer],
    ["llama.feed_forward_length", s.nFF], ["llama.attention.head_count", s.nHead], ["llama.attention.head_count_kv", s.nKVHead],
    ["llama.attention.layer_norm_rms_epsilon", 1e-5, GGUFValueType.FLOAT32], ["llama.rope.freq_base", 100000, GGUFValueType.FLOAT32], ["llama.rope.dimension_count", hd],
    ["llama.vocab_size", s.nVocab],
    ["tokenizer.ggml.model", "llama"], ["tokenizer.ggml.tokens", tokens],
    ["tokenizer.ggml.scores", new Float32Array(s.nVocab)],
    ["tokenizer.ggml.token_type", Int32Array.from({ length: s.nVocab }, (_, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1))],
    ["tokenizer.ggml.bos_token_id", 1], ["tokenizer.ggml.eos_token_id", 2], ["tokenizer.ggml.unknown_token_id", 0],
    ["general.quantization_version", 2, GGUFValueType.UINT32],
  ];
  writeGGUF(path, { metadata, tensors });
  return path;
}
