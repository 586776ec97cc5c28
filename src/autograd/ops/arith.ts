// Elementwise arithmetic: sums (residuals), scaling, soft-capping.

import { accumulate, type Var } from "../tape.js";

/** a + b (same shape); ∂a = ∂b = ∂y */
export function add(a: Var, b: Var): Var {
  if (a.size !== b.size) throw new RangeError(`add: ${a.size} vs ${b.size} values`);
  return a.tape.record(a.shape, a.tape.kernels.add(a.data, b.data, a.tape.scratch(a.size)), [a, b], (out) => {
    accumulate(a, out.grad!);
    accumulate(b, out.grad!);
  });
}

/** s · x;  ∂x = s ∂y */
export function scale(x: Var, s: number): Var {
  const y = new Float32Array(x.size);
  for (let i = 0; i < y.length; i++) y[i] = x.data[i] * s;
  return x.tape.record(x.shape, y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let i = 0; i < dx.length; i++) dx[i] += s * dy[i];
  });
}

/** cap · tanh(x / cap);  ∂x = (1 − tanh²(x / cap)) ∂y */
export function softcap(x: Var, cap: number): Var {
  const y = new Float32Array(x.size);
  for (let i = 0; i < y.length; i++) y[i] = cap * Math.tanh(x.data[i] / cap);
  return x.tape.record(x.shape, y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let i = 0; i < dx.length; i++) {
      const t = Math.tanh(x.data[i] / cap);
      dx[i] += (1 - t * t) * dy[i];
    }
  });
}

/** f(x) elementwise, for a function given with its derivative;  ∂x = f'(x) ∂y */
export function map(x: Var, f: (v: number) => number, df: (v: number) => number): Var {
  const y = new Float32Array(x.size);
  for (let i = 0; i < y.length; i++) y[i] = f(x.data[i]);
  return x.tape.record(x.shape, y, [x], (out) => {
    const dx = x.gradBuffer(), dy = out.grad!;
    for (let i = 0; i < dx.length; i++) dx[i] += df(x.data[i]) * dy[i];
  });
}
