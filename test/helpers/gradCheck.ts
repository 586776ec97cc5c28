// Gradients against central finite differences: the check every differentiable op and every
// training forward is held to (test/autograd.test.ts, test/vit.test.ts).

import assert from "node:assert/strict";
import { Tape, type Var } from "../../src/autograd/tape.js";
import type { TrainKernels } from "../../src/autograd/kernels/index.js";
import { Rng } from "../../src/data/rng.js";

/** Σ y ⊙ w for fixed random weights w: a scalar that depends on every output. */
function probe(y: Var, w: Float32Array): Var {
  let s = 0;
  for (let i = 0; i < y.size; i++) s += y.data[i] * w[i];
  return y.tape.record([1], new Float32Array([s]), [y], (out) => {
    const g = y.gradBuffer();
    for (let i = 0; i < g.length; i++) g[i] += w[i] * out.grad![0];
  });
}

export interface GradCheckOptions { h?: number; tol?: number; kernels?: TrainKernels }

/** A gradient checker and random inputs drawn from one seeded generator. */
export function gradChecker(rng: Rng) {
  const randn = (n: number, s = 1) => Float32Array.from({ length: n }, () => rng.normal() * s);
  const t = (shape: number[], s = 1) => ({ data: randn(shape.reduce((a, b) => a * b, 1), s), shape });

  /**
   * Checks ∂f/∂input for every input against (f(x + h) − f(x − h)) / (2h), element by element;
   * the whole gradient must agree within `tol` relative to its norm.
   */
  function gradCheck(name: string, inputs: { data: Float32Array; shape: number[] }[], f: (vs: Var[]) => Var, { h = 1e-2, tol = 1e-2, kernels }: GradCheckOptions = {}): void {
    let w: Float32Array | undefined;
    const run = (withGrad: boolean) => {
      const tape = new Tape(kernels);
      const vs = inputs.map((x) => tape.param(x.data, x.shape));
      const y = f(vs);
      w ??= randn(y.size);
      const loss = y.size === 1 ? y : probe(y, w);
      if (withGrad) tape.backward(loss);
      return { loss: loss.data[0], vs };
    };
    const analytic = run(true).vs.map((v) => Float64Array.from(v.grad ?? new Float32Array(v.size)));
    inputs.forEach((x, k) => {
      const num = new Float64Array(x.data.length);
      for (let i = 0; i < x.data.length; i++) {
        const x0 = x.data[i];
        x.data[i] = x0 + h; const xp = x.data[i]; const fp = run(false).loss;
        x.data[i] = x0 - h; const xm = x.data[i]; const fm = run(false).loss;
        x.data[i] = x0;
        num[i] = (fp - fm) / (xp - xm);
      }
      let diff = 0, ref = 0;
      for (let i = 0; i < num.length; i++) { diff += (num[i] - analytic[k][i]) ** 2; ref += num[i] ** 2; }
      const rel = Math.sqrt(diff) / Math.max(Math.sqrt(ref), 1e-6);
      assert.ok(rel <= tol, `${name}: input ${k} gradient differs from finite differences by ${rel.toExponential(2)} (relative)`);
    });
  }
  return { gradCheck, randn, t };
}
