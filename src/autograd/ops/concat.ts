// Stacking matrices along their rows: y = [a; b; …]. The backward cuts ∂y back into the pieces,
// each input receiving the rows it contributed (a ViT's class token joining its image's patches).

import type { Var } from "../tape.js";

/** parts: [R_i, n] each → [Σ R_i, n] */
export function concatRows(parts: readonly Var[]): Var {
  if (parts.length === 0) throw new RangeError("concatRows: nothing to concatenate");
  const n = parts[0].cols;
  for (const p of parts) if (p.cols !== n) throw new RangeError(`concatRows: a part has ${p.cols} columns, the first has ${n}`);
  const y = new Float32Array(parts.reduce((s, p) => s + p.size, 0));
  let offset = 0;
  for (const p of parts) { y.set(p.data, offset); offset += p.size; }
  return parts[0].tape.record([y.length / n, n], y, parts, (out) => {
    const dy = out.grad!;
    let o = 0;
    for (const p of parts) {
      if (p.requiresGrad) {
        const g = p.gradBuffer();
        for (let i = 0; i < g.length; i++) g[i] += dy[o + i];
      }
      o += p.size;
    }
  });
}
