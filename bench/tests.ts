// The benchmark's tests, named as llama-bench names them: ppN processes a prompt of N tokens from
// an empty cache; tgN@D generates N tokens one at a time after a cache already holding D tokens
// (llama-bench -d D; tgN is tgN@0). Only the timed part counts: filling the cache is not timed.

export interface BenchTest {
  name: string;
  kind: "pp" | "tg";
  /** Tokens timed. */
  n: number;
  /** Tokens already in the cache before the timed part (decode tests only). */
  depth: number;
}

export const DEFAULT_TESTS = ["pp128", "pp512", "tg64", "tg64@1024", "tg64@4096"];

/** Parse "pp128", "tg64", "tg64@4096"; throws with what was expected. */
export function parseTest(name: string): BenchTest {
  const m = /^(pp|tg)(\d+)(?:@(\d+))?$/.exec(name.trim());
  if (!m || Number(m[2]) < 1 || (m[1] === "pp" && m[3] !== undefined)) {
    throw new Error(`test "${name}": expected ppN (prompt of N tokens) or tgN[@D] (N generated tokens after D cached ones), e.g. pp128, tg64@4096`);
  }
  const depth = Number(m[3] ?? 0);
  return { name: m[1] === "tg" && depth === 0 ? `tg${m[2]}` : name.trim(), kind: m[1] as "pp" | "tg", n: Number(m[2]), depth };
}

/** The prompt tokens toy and node-llama-cpp feed (llama-bench draws random ones; speed does not care). */
export function benchTokens(count: number, nVocab: number): Int32Array {
  const first = nVocab > 600 ? 300 : 0, span = Math.min(20000, nVocab - first); // past the special tokens
  return Int32Array.from({ length: count }, (_, i) => first + ((i * 7919) % span));
}
