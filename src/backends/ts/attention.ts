// Scaled dot-product attention of T queries over a KV cache, one head at a time:
//   score_j = scale · q·k_j (soft-capped if asked), w = softmax(score), out = Σ_j w_j v_j
// Query head h reads KV head h / (nHeads / nKVHeads) (grouped-query attention).
// Keys and values stored as F16 or Q8_0 are first dequantized to float32 (the plain reference).

import { GGMLType } from "../../io/gguf/types.js";
import { dequantizeRow } from "../../quant/index.js";
import type { AttentionOptions, KVRows, KVType } from "../kernels.js";

const GGML_TYPE: Record<KVType, GGMLType> = { f32: GGMLType.F32, f16: GGMLType.F16, q8_0: GGMLType.Q8_0 };

/** The first `rows` rows of `width` values of cached K or V, as float32. */
function floats(x: KVRows, rows: number, width: number): Float32Array {
  if (x.type === "f32") return new Float32Array(x.bytes.buffer, x.bytes.byteOffset, rows * width);
  const out = new Float32Array(rows * width);
  dequantizeRow(GGML_TYPE[x.type], x.bytes, 0, rows * width, out, 0);
  return out;
}

export function attention(q: Float32Array, kRows: KVRows, vRows: KVRows, T: number, pos0: number, nKeys: number, nHeads: number, nKVHeads: number, headDim: number, opts: AttentionOptions, out: Float32Array): void {
  const group = nHeads / nKVHeads;
  const kvStride = nKVHeads * headDim;
  const k = floats(kRows, nKeys, kvStride), v = floats(vRows, nKeys, kvStride);
  const scores = new Float64Array(nKeys);
  for (let t = 0; t < T; t++) {
    const p = pos0 + t;
    const last = opts.causal ? Math.min(p, nKeys - 1) : nKeys - 1;
    const first = opts.window > 0 ? Math.max(0, p - opts.window + 1) : 0;
    for (let h = 0; h < nHeads; h++) {
      const qo = (t * nHeads + h) * headDim;
      const kvo = Math.floor(h / group) * headDim;
      let max = -Infinity;
      for (let j = first; j <= last; j++) {
        const ko = j * kvStride + kvo;
        let s = 0;
        for (let i = 0; i < headDim; i++) s += q[qo + i] * k[ko + i];
        s *= opts.scale;
        if (opts.softcap > 0) s = opts.softcap * Math.tanh(s / opts.softcap);
        scores[j] = s;
        if (s > max) max = s;
      }
      let sum = 0;
      for (let j = first; j <= last; j++) sum += scores[j] = Math.exp(scores[j] - max);
      const oo = (t * nHeads + h) * headDim;
      for (let i = 0; i < headDim; i++) {
        let acc = 0;
        for (let j = first; j <= last; j++) acc += scores[j] * v[j * kvStride + kvo + i];
        out[oo + i] = acc / sum;
      }
    }
  }
}
