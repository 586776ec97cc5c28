// What every language-model architecture provides, and how one is built from a config.

import type { Device } from "../backends/kernels.js";
import { InferenceOps, RopeTables } from "../blocks/inferenceOps.js";
import { KVCache, layoutBatch } from "../blocks/kvCache.js";
import { checkKVType, DEFAULT_KV_TYPE, type KVType } from "../blocks/kvCacheTypes.js";
import type { Ops, Value } from "../blocks/ops.js";
import { hugePageBytes } from "../primitives/index.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import { Workspace } from "../tensor/workspace.js";
import { Tensor } from "../tensor/tensor.js";
import { kernelsFor } from "../backends/index.js";
import { DecodeReplay } from "./decodeReplay.js";
import type { ModelConfig } from "./config.js";
import { attentionConfig, decoderTensors, type TensorSpec } from "./layers.js";
import { decoderForward } from "./llama.js";
import { ModelWeights } from "./weights.js";

export interface LanguageModel {
  readonly arch: string;
  readonly file: GGUFFile;
  readonly device: Device;
  readonly nVocab: number;
  readonly contextLength: number;
  /** The configuration the model was built from (what `toy describe --json` prints). */
  readonly config: ModelConfig;
  /** The storage type of the caches `newCache` makes unless told otherwise. */
  readonly cacheType: KVType;
  /**
   * A fresh KV cache for up to `capacity` positions (default: the model's context length), storing
   * keys and values as `type` (default: cacheType). Sliding-window layers keep only their window.
   * hugePages: one buffer for all layers on transparent huge pages where the backend has them
   * (cpu, Linux): decode attention over a long cache reads it faster, and written pages are
   * resident 2 MB at a time, so ask for it when the sequence will fill about `capacity`.
   */
  newCache(capacity?: number, opts?: { type?: KVType; hugePages?: boolean }): KVCache;
  /**
   * Run tokens `ids` at positions cache.length.. and append them to the cache.
   * Returns logits [T, vocab] ("all") or [1, vocab] for the last token ("last"), in a new array,
   * or in `out` when given (exactly that many values): a decode loop that reads each step's
   * logits before the next step passes one array for all of them and allocates nothing per token.
   */
  forward(ids: Int32Array, cache: KVCache, logits: "all" | "last", out?: Float32Array): Tensor;
  /**
   * Several sequences in one pass (their rows share every matrix product): each continues its
   * own cache. Returns the logits of each sequence's last token: [sequences, vocab] (in `out`
   * when given, as forward).
   */
  forwardBatch(sequences: readonly { ids: Int32Array; cache: KVCache }[], out?: Float32Array): Tensor;
  /**
   * Backends that answer asynchronously (webgpu, archs/gpuModel.ts) have these instead of
   * `forward` and `forwardBatch` (which then throw): the same results, as promises.
   */
  forwardAsync?(ids: Int32Array, cache: KVCache, logits: "all" | "last"): Promise<Tensor>;
  forwardBatchAsync?(sequences: readonly { ids: Int32Array; cache: KVCache }[]): Promise<Tensor>;
  /** Run `ids` like forwardAsync and return the argmax of the last token's logits (computed on
   *  the device: one id read back instead of a row of logits). */
  greedyAsync?(ids: Int32Array, cache: KVCache): Promise<number>;
}

/**
 * Token ids to logits, written once against Ops (blocks/ops.ts): the same code runs for
 * inference (X = Tensor, KV cache) and for training (X = Var, on the tape).
 * ids: [N] → [N, vocab] (inference may keep only the rows it was asked for: [S, vocab]).
 */
export type Forward = <X extends Value>(ops: Ops<X>, c: ModelConfig, ids: Int32Array) => X;

export interface Architecture {
  name: string;
  /** Read the configuration from GGUF metadata. */
  config(file: GGUFFile): ModelConfig;
  /** The forward (default: the shared decoder, archs/llama.ts decoderForward). */
  forward?: Forward;
  /** The tensors the forward reads, checked when a model loads (default: decoderTensors). */
  tensors?(c: ModelConfig): TensorSpec[];
}

/** An architecture's forward: its own, or the shared decoder. */
export function forwardOf(arch: Architecture): Forward {
  return arch.forward ?? decoderForward;
}

/** Options of loading a model. */
export interface ModelOptions {
  /** KV-cache storage type (default f32: the references' numerics; the CLI defaults to f16). */
  cacheType?: KVType;
  /** Replay recorded decode steps where the backend can (archs/decodeReplay.ts; default true:
   *  the same bits, faster). false: every step runs the forward. */
  replay?: boolean;
}

export function buildModel(arch: Architecture, file: GGUFFile, config: ModelConfig, device: Device, opts: ModelOptions = {}): LanguageModel {
  const forward = forwardOf(arch);
  const weights = new ModelWeights(file);
  weights.check((arch.tensors ?? decoderTensors)(config));
  const ropes = new RopeTables(weights);
  const kvWidth = config.nKVHead * config.headDim;
  const cacheType = checkKVType(opts.cacheType ?? DEFAULT_KV_TYPE, config.headDim);
  const windows = Array.from({ length: config.nLayer }, (_, l) => attentionConfig(config, l).attn.window);
  const workspace = new Workspace();
  let replay: DecodeReplay | null | undefined; // decided at the first decode step
  return {
    arch: arch.name, file, device, config, cacheType,
    nVocab: config.nVocab, contextLength: config.contextLength,
    newCache: (capacity = config.contextLength, o = {}) =>
      new KVCache(config.nLayer, capacity, kvWidth, {
        type: checkKVType(o.type ?? cacheType, config.headDim), windows,
        storage: o.hugePages ? (bytes) => hugePageBytes(device, bytes) : undefined,
      }),
    forward(ids, cache, logits, out) {
      return run([{ ids, cache }], logits === "all", out);
    },
    forwardBatch(sequences, out) {
      return run(sequences, false, out);
    },
  };

  function run(sequences: readonly { ids: Int32Array; cache: KVCache }[], allRows: boolean, out?: Float32Array): Tensor {
    const rows = allRows ? sequences.reduce((n, s) => n + s.ids.length, 0) : sequences.length;
    if (out && out.length !== rows * config.nVocab) {
      throw new RangeError(`forward: out holds ${out.length} values; the logits are ${rows} row(s) × ${config.nVocab} = ${rows * config.nVocab}`);
    }
    // A decode step (one token of each sequence): replayed when these caches have a recorded
    // step, else recorded.
    const step = sequences.length > 0 && sequences.every((s) => s.ids.length === 1) && replayer();
    if (step) {
      const logits = replay!.replay(sequences, out);
      if (logits) return new Tensor([sequences.length, config.nVocab], logits, device);
    }
    const batch = layoutBatch(sequences);
    const { segments, ids, positions } = batch, lastRows = allRows ? null : batch.lastRows;
    const ops = new InferenceOps(weights, ropes, device, segments, positions, lastRows);
    // Activation arrays are reused layer after layer and from one forward to the next of the
    // same shape (decode steps; a prompt read in chunks): about one layer's worth stays resident.
    const pass = () => workspace.run(() => forward(ops, config, ids), (logits) => logits.data);
    const logits = step ? replay!.record(sequences, ops, ids, pass, (l) => l.data, config.nVocab) : pass();
    for (const s of segments) s.cache!.length += s.length;
    if (!out) return logits;
    out.set(logits.data);
    return new Tensor(logits.shape, out, device);
  }

  function replayer(): DecodeReplay | null {
    if (replay === undefined) {
      const k = opts.replay === false ? null : kernelsFor(device);
      replay = k?.recordStep ? new DecodeReplay({ recordStep: k.recordStep.bind(k) }) : null;
    }
    return replay;
  }
}
