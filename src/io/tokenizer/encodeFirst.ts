// The first n ids of a long text without encoding all of it (`toy eval --file F --max-tokens N`
// on a large file: encoding runs ~0.5 s per MB).
//
// Cutting the text changes only the ids next to the cut: a byte-level BPE merges within one
// pre-token, and SentencePiece's merges reach no further than the pieces beside them. So a prefix
// long enough that its encoding runs well past id n gives the whole text's first n ids. To see
// that a prefix is long enough, two are encoded, the second twice the first: where both run at
// least MARGIN ids past n and agree on their first n, those are the ids.

import type { EncodeOptions, Tokenizer } from "./index.js";

/** Ids past n that a prefix's encoding must reach before its first n count. */
const MARGIN = 64;

/** tokenizer.encode(text, opts).slice(0, n), encoding prefixes of text that grow by doubling. */
export function encodeFirst(tokenizer: Tokenizer, text: string, n: number, opts?: EncodeOptions): number[] {
  let previous: number[] | undefined;
  for (let length = Math.max(4096, 8 * (n + MARGIN)); ; length *= 2) {
    if (length >= text.length) return tokenizer.encode(text, opts).slice(0, n);
    const ids = tokenizer.encode(text.slice(0, length), opts);
    if (ids.length < n + MARGIN) {
      previous = undefined; // too short to tell: grow
      continue;
    }
    if (previous && previous.slice(0, n).every((id, i) => id === ids[i])) return ids.slice(0, n);
    previous = ids;
  }
}
