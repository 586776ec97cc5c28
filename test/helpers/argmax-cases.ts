// Rows for the argmax tests (test/cpu-backend.test.ts), shared with the portable-kernel child
// process that test starts.

import { randn } from "../../src/backends/cpu/selftest.js";

/** Arrays whose first largest entry is easy to get wrong: ties, NaN (first and inside), ±0, ±Infinity, odd lengths. */
export function argmaxCases(): Float32Array[] {
  const cases: Float32Array[] = [];
  for (const n of [1, 7, 8, 9, 17, 1023, 1024, 1031, 49152, 262144]) {
    const x = randn(n, n);
    cases.push(x);
    const tie = Float32Array.from(x); if (n > 3) { tie[n - 1] = 99; tie[n >> 1] = 99; tie[2] = 98; } cases.push(tie);
    const nanMid = Float32Array.from(x); nanMid[n >> 1] = NaN; cases.push(nanMid);
    const nanFirst = Float32Array.from(x); nanFirst[0] = NaN; nanFirst[n - 1] = Infinity; cases.push(nanFirst);
    const zeros = new Float32Array(n).fill(-0); zeros[n - 1] = 0; cases.push(zeros);
    const negInf = new Float32Array(n).fill(-Infinity); cases.push(negInf);
    const ramp = Float32Array.from({ length: n }, (_, i) => -Math.abs(i - (n * 2) / 3)); cases.push(ramp);
  }
  return cases;
}

