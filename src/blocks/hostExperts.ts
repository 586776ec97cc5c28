// A mixture of experts' routing on the host (the inference and training ops; blocks/ops.ts
// Routes): each token's experts are picked from the probabilities' values, and the routed rows
// keep each expert's tokens together, so that an expert's block of a stacked weight is one
// product over its tokens (the products the cpu and ts backends have always run).

import type { Ops, Routes, Value } from "./ops.js";

/** For each expert, the tokens (rows of probs [T, E]) whose top `used` experts include it. */
export function route(probs: Float32Array, T: number, E: number, used: number): number[][] {
  const tokens: number[][] = Array.from({ length: E }, () => []);
  for (let t = 0; t < T; t++) {
    const p = probs.subarray(t * E, (t + 1) * E);
    const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => p[b] - p[a] || a - b);
    for (const e of order.slice(0, used)) tokens[e].push(t);
  }
  return tokens;
}

/** One expert's share of the routed rows: rows [start, start + tokens.length) are its tokens. */
export interface ExpertRows {
  expert: number;
  tokens: readonly number[];
  start: number;
}

export interface HostRoutes<X> extends Routes {
  /** [T, E] the router's probabilities. */
  probs: X;
  /** The experts that have tokens, by index. */
  experts: readonly ExpertRows[];
  /** The token of each routed row. */
  order: readonly number[];
}

/** ops.topExperts on the host. */
export function hostRoutes<X extends Value>(probs: X, used: number): HostRoutes<X> {
  const T = probs.rows, E = probs.cols;
  const experts: ExpertRows[] = [], order: number[] = [];
  route(probs.data, T, E, used).forEach((tokens, expert) => {
    if (tokens.length === 0) return;
    experts.push({ expert, tokens, start: order.length });
    order.push(...tokens);
  });
  return { tokens: T, used, probs, experts, order };
}

/** ops.expertLinear on the host: per expert, its rows times its block of the weight. */
export function expertProducts<X extends Value>(ops: Ops<X>, x: X, weight: string, routes: HostRoutes<X>, rows: number): X {
  return ops.concatRows(routes.experts.map(({ expert, tokens, start }) =>
    ops.linear(ops.sliceRows(x, start, start + tokens.length), weight, null, [expert * rows, (expert + 1) * rows])));
}
