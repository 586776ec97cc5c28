// A language model whose forward runs on a WebGPU device (the webgpu backend). The forward
// code is the architecture's own (archs/*.ts), run against GPU ops (blocks/gpuOps.ts): each
// forward is recorded into one command buffer and submitted once; weights are uploaded on the
// first forward and stay in their storage type; the KV cache lives in GPU memory
// (blocks/gpuKVCache.ts). Only the logits rows asked for are read back, or, for greedy
// decoding, one token id per sequence (argmax on the GPU).
//
// The GPU answers asynchronously, so `forward`/`forwardBatch` (synchronous) refuse and
// `forwardAsync`/`greedyAsync` run instead (engines/generate.ts generateAsync uses them).

import { argmax } from "../backends/webgpu/argmax.js";
import { Recorder, type GpuRuntime } from "../backends/webgpu/runtime.js";
import { GpuWeights } from "../backends/webgpu/weights.js";
import { GpuKVCache } from "../blocks/gpuKVCache.js";
import { GpuOps } from "../blocks/gpuOps.js";
import { RopeTables } from "../blocks/inferenceOps.js";
import { layoutBatch, type KVCache } from "../blocks/kvCache.js";
import { checkKVType, DEFAULT_KV_TYPE } from "../blocks/kvCacheTypes.js";
import { BackendError, ToyError } from "../errors.js";
import { typeName } from "../io/gguf/types.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { supportsWeightType } from "../backends/webgpu/quant.js";
import { Tensor } from "../tensor/tensor.js";
import type { ModelConfig } from "./config.js";
import { decoderTensors } from "./layers.js";
import { forwardOf, type Architecture, type LanguageModel, type ModelOptions } from "./model.js";
import { ModelWeights } from "./weights.js";

/** Why a model cannot run on webgpu, checked at load (null: it can). */
function unsupported(arch: Architecture, file: GGUFFile, config: ModelConfig): string | null {
  for (const s of (arch.tensors ?? decoderTensors)(config)) {
    const info = file.tensor(s.name);
    if (info && !supportsWeightType(info.type)) return `tensor ${s.name} is stored as ${typeName(info.type)}, which the webgpu backend does not read yet`;
  }
  return null;
}

export function buildGpuModel(arch: Architecture, file: GGUFFile, config: ModelConfig, rt: GpuRuntime, opts: ModelOptions = {}): LanguageModel {
  const forward = forwardOf(arch);
  const host = new ModelWeights(file);
  host.check((arch.tensors ?? decoderTensors)(config));
  const cacheType = checkKVType(opts.cacheType ?? DEFAULT_KV_TYPE, config.headDim);
  const why = unsupported(arch, file, config);
  if (why) throw new BackendError(`webgpu: ${file.path}: ${why}`);
  const weights = new GpuWeights(rt, host);
  const ropes = new RopeTables(host);
  const kvWidth = config.nKVHead * config.headDim;
  const refuse = (): never => {
    throw new ToyError("the webgpu backend computes asynchronously: use forwardAsync (engines: generateAsync)");
  };

  /** Record the forward of these sequences; returns the recorder and the output [S | N, vocab]. */
  function record(sequences: readonly { ids: Int32Array; cache: KVCache }[], allRows: boolean) {
    for (const { cache } of sequences) {
      if (!(cache instanceof GpuKVCache)) throw new ToyError("webgpu: this cache was not made by this model's newCache()");
    }
    const batch = layoutBatch(sequences);
    const { segments, ids, positions } = batch, lastRows = allRows ? null : batch.lastRows;
    const rec = new Recorder(rt);
    const ops = new GpuOps(rec, weights, ropes, segments, positions, lastRows);
    const out = forward(ops, config, ids);
    ops.flush(); // the last products (the logits) may still be pending
    const advance = () => { for (const s of segments) s.cache!.length += s.length; };
    return { rec, out, advance };
  }

  return {
    arch: arch.name, file, device: "webgpu", config, cacheType,
    nVocab: config.nVocab, contextLength: config.contextLength,
    newCache: (capacity = config.contextLength, o = {}) => {
      const type = checkKVType(o.type ?? cacheType, config.headDim);
      return new GpuKVCache(rt, config.nLayer, capacity, kvWidth, type);
    },
    forward: refuse,
    forwardBatch: refuse,
    async forwardAsync(ids, cache, logits) {
      const { rec, out, advance } = record([{ ids, cache }], logits === "all");
      const [values] = await rec.submit([{ buffer: out.buffer, bytes: out.size * 4 }]);
      advance();
      return new Tensor([out.rows, out.cols], new Float32Array(values));
    },
    async forwardBatchAsync(sequences) {
      const { rec, out, advance } = record(sequences, false);
      const [values] = await rec.submit([{ buffer: out.buffer, bytes: out.size * 4 }]);
      advance();
      return new Tensor([out.rows, out.cols], new Float32Array(values));
    },
    async greedyAsync(ids, cache) {
      const { rec, out, advance } = record([{ ids, cache }], false);
      const best = rec.buffer(4, "argmax");
      argmax(rec, out.buffer, 1, out.cols, best);
      const [values] = await rec.submit([{ buffer: best, bytes: 4 }]);
      advance();
      return new Uint32Array(values)[0];
    },
  };
}
