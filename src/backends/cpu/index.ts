// The `cpu` backend: C kernels (SIMD, a thread pool, integer dot products for every GGUF type)
// behind a Node-API addon. Loading never throws: without the addon, callers get the reason and
// stay on the `ts` backend.

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { Kernels, StepPlan } from "../kernels.js";
import type { NativeAddon } from "./native.js";
import type { Weight } from "../../tensor/weight.js";


export type { NativeAddon } from "./native.js";
export { selfTest, type SelfTestResult } from "./selftest.js";

export interface CpuBackend {
  kernels: Kernels;
  /** bf16: BF16 weights multiply activations rounded to bf16 (AVX512-BF16), as llama.cpp does. */
  info: { simd: string; gemm: string; threads: number; bf16: boolean };
  /** The file's bytes, memory-mapped (no copy; unmapped when garbage-collected). */
  mapFile(path: string): Uint8Array;
  /** Resize the thread pool (results do not depend on it). */
  setThreads(n: number): void;
  addon: NativeAddon;
}

/** dist/src/backends/cpu/index.js → <root>/build/Release/toy_native.node */
export const ADDON_PATH = fileURLToPath(new URL("../../../../build/Release/toy_native.node", import.meta.url));

let cached: CpuBackend | { error: string } | undefined;

export function loadCpuBackend(): CpuBackend | { error: string } {
  if (cached) return cached;
  if (!existsSync(ADDON_PATH)) return (cached = { error: `native addon not built (${ADDON_PATH} missing; run npm run build:native)` });
  let addon: NativeAddon;
  try {
    addon = createRequire(import.meta.url)(ADDON_PATH) as NativeAddon;
    if (typeof addon.matmul !== "function" || typeof addon.info !== "function") return (cached = { error: `${ADDON_PATH} is not toy's addon` });
  } catch (e) {
    return (cached = { error: `native addon failed to load: ${(e as Error).message}` });
  }
  const kernels = cpuKernels(addon);
  cached = {
    kernels,
    get info() { return addon.info(); },
    mapFile: (path) => addon.mapFile(path),
    setThreads: (n) => addon.setThreads(n),
    addon,
  };
  return cached;
}

/** ggml's type ids of the KV-cache types. */
const KV_TYPE_ID = { f32: 0, f16: 1, q8_0: 8 } as const;

function cpuKernels(a: NativeAddon): Kernels {
  // Weights are repacked on their first product (native/matmul.c k_repack: eight-row groups
  // block-interleaved, one memory stream for the widest kernels; same results). The copy lives as
  // long as the weight's bytes; for a mapped file the original pages are dropped, so it replaces
  // them in memory. An F32 weight is copied only from a mapped file (training updates its own F32
  // parameters in place, js_repack).
  const packed = new WeakMap<Uint8Array, Uint8Array | null>();
  const packedOf = (w: Weight): Uint8Array | null => {
    let p = packed.get(w.bytes);
    if (p === undefined) {
      p = typeof a.repack === "function" ? a.repack(w.bytes, w.type, w.rows, w.cols) ?? null : null;
      packed.set(w.bytes, p);
    }
    return p;
  };
  return {
    device: "cpu",
    matmul: (x, w, T, out) => {
      const p = packedOf(w);
      if (p) a.matmulPacked(x, p, w.type, w.rows, w.cols, T, out);
      else a.matmul(x, w.bytes, w.type, w.rows, w.cols, T, out);
    },
    matmulMany: (x, ws, T, outs) => {
      const desc = new Int32Array(ws.length * 3);
      const bytes = ws.map((w, i) => {
        const p = packedOf(w);
        desc[3 * i] = w.type; desc[3 * i + 1] = w.rows; desc[3 * i + 2] = p ? 1 : 0;
        return p ?? w.bytes;
      });
      return a.matmulMulti(x, ws[0].cols, T, bytes, desc, outs);
    },
    // A tied embedding repacked for the output product is read from that copy: its file pages,
    // dropped by the repack, stay out of memory. An embedding used only here is never repacked.
    getRows: (w, ids, out) => {
      const p = packed.get(w.bytes);
      if (p) a.getRows(p, w.type, w.rows, w.cols, ids, out, 1);
      else a.getRows(w.bytes, w.type, w.rows, w.cols, ids, out);
    },
    rmsNorm: (x, weight, rows, n, eps, out) => a.rmsNorm(x, weight, rows, n, eps, out),
    layerNorm: (x, weight, bias, rows, n, eps, out) => a.layerNorm(x, weight, bias, rows, n, eps, out),
    rope: (x, T, nHeads, headDim, ropeDims, positions, invFreq, style) =>
      a.rope(x, T, nHeads, headDim, ropeDims, positions, invFreq, style === "neox" ? 1 : 0),
    attention: (q, k, v, T, pos0, nKeys, nHeads, nKVHeads, headDim, o, out) =>
      a.attention(q, k.bytes, v.bytes, KV_TYPE_ID[k.type], T, pos0, nKeys, nHeads, nKVHeads, headDim, o.scale, o.softcap, o.window, o.causal ? 1 : 0, out),
    attentionBatch: (q, segs, nHeads, nKVHeads, headDim, o, out) => {
      const desc = new Int32Array(segs.length * 4);
      segs.forEach((s, i) => desc.set([s.start, s.length, s.pos0, s.nKeys], i * 4));
      a.attentionBatch(q, KV_TYPE_ID[segs[0].k.type], desc, segs.map((s) => s.k.bytes), segs.map((s) => s.v.bytes), nHeads, nKVHeads, headDim,
        o.scale, o.softcap, o.window, o.causal ? 1 : 0, out);
    },
    storeKV: (x, type, dst, off) => a.storeKV(x, KV_TYPE_ID[type], dst, off),
    swiglu: (g, u, out) => a.swiglu(g, u, out),
    geglu: (g, u, out) => a.geglu(g, u, out),
    gelu: (x, out) => a.gelu(x, out),
    add: (x, y, out) => a.add(x, y, out),
    softmax: (x, rows, n) => a.softmax(x, rows, n),
    ropePair: (q, k, T, qHeads, kHeads, headDim, ropeDims, positions, invFreq, style) =>
      a.ropePair(q, k, T, qHeads, kHeads, headDim, ropeDims, positions, invFreq, style === "neox" ? 1 : 0),
    storeKVPair: (k, v, type, kDst, vDst, off) => a.storeKVPair(k, v, KV_TYPE_ID[type], kDst, vDst, off),
    addRmsNorm: (x, y, weight, rows, n, eps, sum, out) => a.addRmsNorm(x, y, weight, rows, n, eps, sum, out),
    allocHugePages: (n) => a.allocHugePages(n),
    scale: (x, s, out) => a.scale(x, s, out),
    recordStep: a.planBegin && a.planEnd && a.planRun ? (kv, fn, result, logits) => {
      const keep: unknown[] = [kv.rowBytes, kv.rows, logits]; // the plan reads their memory
      a.planBegin!(keep, kv.keys, kv.values, kv.rowBytes, kv.rows);
      let out;
      try {
        out = fn();
      } catch (e) {
        a.planEnd!(null, null);
        throw e;
      }
      const plan = a.planEnd!(result(out), logits);
      return { out, plan: typeof plan === "string" ? plan : { run: (into) => a.planRun!(plan, into), keep } as StepPlan };
    } : undefined,
  };
}
