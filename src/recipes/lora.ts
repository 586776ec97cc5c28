// lora: low-rank adapters on a frozen GGUF (Hu et al. 2021). For each target matrix W [out, in]
//   W' = W + (alpha / rank) · B A,   A: [rank, in] ~ U(−1/√in, 1/√in) (seeded),  B: [out, rank] = 0
// so training starts at the base model. Only A and B train.
// The adapter is saved in llama.cpp's LoRA GGUF format (loraAdapter.ts): for each target
// `<name>.weight.lora_a` (ggml dims [in, rank]) and `<name>.weight.lora_b` (ggml dims [rank, out]).
// Inside the trainer A is kept transposed (Aᵀ: ggml dims [rank, in]), so B A = linear(B, Aᵀ).

import { configOf } from "../archs/index.js";
import { DEFAULT_TRAIN_OPTIONS, Trainer, trainKernels, type RunOptions, type TrainOptions } from "../train/trainer.js";
import { Rng } from "../data/rng.js";
import type { Adapter, Parameters } from "../train/objectives.js";
import { parametersFromFile, writeCheckpoint } from "../train/params.js";
import { UsageError } from "../errors.js";
import { readGGUF, type GGUFFile } from "../io/gguf/reader.js";
import { loraScale, mergeLowRank, readLoraAdapter, transpose, writeLoraAdapter, type LoraAdapter } from "./loraAdapter.js";
import type { RealizedRun } from "./warmStart.js";

export { applyLoraAdapter, loraScale, mergeLowRank, readLoraAdapter, writeLoraAdapter, type LoraAdapter, type LoraMatrix } from "./loraAdapter.js";

export const DEFAULT_LORA_TARGETS = ["attn_q", "attn_v"] as const;

export type LoraOptions = RunOptions & {
  rank: number;
  alpha: number;
  /** Matrix names without `blk.N.` and `.weight` (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, …). */
  targets: readonly string[];
  /** Start from this adapter file instead of fresh A, B (resuming). */
  adapter?: string;
};

export interface LoraRun extends RealizedRun {
  /** The base tensors adapted, by GGUF name. */
  readonly targets: string[];
  readonly scale: number;
  /** Write the adapter (llama.cpp LoRA GGUF). */
  save(path: string): void;
  /** Write base + adapter merged as an F32 GGUF. */
  saveMerged(path: string): void;
}

/**
 * The optimizer settings for adapters on a pretrained model (the recipe's defaults; options
 * override them). B starts at zero, so the run starts at the base model; the adapters are few and
 * small, so they take a larger step than full fine-tuning, but not a from-scratch one. A sweep
 * on SmolLM2 (docs/cli.md, "Learning rates for a pretrained model") picked these.
 */
export const LORA_DEFAULTS = { lr: 3e-3, warmup: 0 } as const;

export const lora = {
  name: "lora",
  defaults: LORA_DEFAULTS,
  realize(model: string | GGUFFile, options: LoraOptions): LoraRun {
    const { rank, alpha, targets: targetNames, adapter, backend, ...train } = options;
    if (!(rank >= 1)) throw new UsageError(`lora: rank must be at least 1, got ${rank}`);
    const trainOptions: TrainOptions = { ...DEFAULT_TRAIN_OPTIONS, ...LORA_DEFAULTS, ...train };
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
    for (const [name, m] of loaded?.matrices ?? []) {
      if (m.rank !== rank) throw new UsageError(`lora: the adapter ${adapter} has rank ${m.rank} for ${name}, not ${rank}`);
    }
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
        const matrices: LoraAdapter["matrices"] = new Map();
        for (const name of targets) {
          const { inn, out, a, b } = factors(name);
          matrices.set(name, { a, b, rows: out, cols: inn, rank });
        }
        const arch = String(source.metadata.get("general.architecture"));
        writeLoraAdapter(path, { alpha, arch, matrices }, `${String(source.metadata.get("general.name") ?? "model")} LoRA`);
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
