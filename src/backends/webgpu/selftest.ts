// Self-test of the webgpu kernels that read weights (matmul and getRows, every storage type the
// shaders read) against the ts backend on small random inputs; `toy install` reports it.
// Tolerances (max |gpu − ts| / max |ts|): matmul 1e-5 (float32 sums of 256 products against
// the reference's float64), getRows 1e-6 (the same dequantization; exact in practice).

import { typeName } from "../../io/gguf/types.js";
import { makeWeight, MATMUL_TYPES, randn, relError, type SelfTestResult } from "../cpu/selftest.js";
import type { Kernels } from "../kernels.js";
import { getRows } from "./getRows.js";
import { matmul } from "./matmul.js";
import { supportsWeightType } from "./quant.js";
import { Recorder, type GpuRuntime } from "./runtime.js";
import { uploadMatrix } from "./weights.js";

export async function webgpuSelfTest(rt: GpuRuntime, reference: Kernels): Promise<SelfTestResult[]> {
  const results: SelfTestResult[] = [];
  const rows = 16, cols = 256, T = 3;
  const x = randn(T * cols, 1);
  const ids = Int32Array.from([5, 0, 15]);
  for (const type of MATMUL_TYPES.filter(supportsWeightType)) {
    const w = makeWeight(type, rows, cols, 100 + type);
    const refY = new Float32Array(T * rows), refRows = new Float32Array(ids.length * cols);
    reference.matmul(x, w, T, refY);
    reference.getRows(w, ids, refRows);
    try {
      const m = uploadMatrix(rt, w);
      const rec = new Recorder(rt);
      const y = rec.buffer(refY.length * 4), r = rec.buffer(refRows.length * 4);
      matmul(rec, rec.upload(x), m, T, null, y);
      getRows(rec, m, rec.upload(ids), ids.length, r);
      const [gotY, gotRows] = (await rec.submit([{ buffer: y, bytes: refY.length * 4 }, { buffer: r, bytes: refRows.length * 4 }])).map((b) => new Float32Array(b));
      for (const p of m.parts) p.buffer.destroy();
      const e1 = relError(gotY, refY), e2 = relError(gotRows, refRows);
      results.push({ kernel: "matmul", type: typeName(type), maxError: e1, tolerance: 1e-5, ok: e1 <= 1e-5 });
      results.push({ kernel: "getRows", type: typeName(type), maxError: e2, tolerance: 1e-6, ok: e2 <= 1e-6 });
    } catch (e) {
      results.push({ kernel: "matmul", type: typeName(type), maxError: Infinity, tolerance: 1e-5, ok: false, error: (e as Error).message });
    }
  }
  return results;
}
