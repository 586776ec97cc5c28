// Byte-level BPE (GPT-2 and its descendants): each pre-token is spelled in GPT-2's byte alphabet,
// split into characters, and the adjacent pair with the lowest merge rank is joined (leftmost on
// ties) until no listed merge applies. Results are cached per pre-token: text repeats words.

import { byteEncode } from "./bytes.js";
import { MergeQueue } from "./heap.js";
import type { Vocab } from "./vocab.js";

const CACHE_LIMIT = 200_000;

export class BpeModel {
  private cache = new Map<string, number[]>();
  private queue = new MergeQueue(); // reused: each word empties it

  constructor(private vocab: Vocab) {}

  /** Appends the ids of one pre-token (raw text, not yet byte-encoded). */
  encodeWord(word: string, out: number[]): void {
    let ids = this.cache.get(word);
    if (!ids) {
      ids = this.merge(byteEncode(word));
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(word, ids);
    }
    for (const id of ids) out.push(id);
  }

  private merge(word: string): number[] {
    const { ids, ranks } = this.vocab;
    const whole = ids.get(word);
    if (whole !== undefined && (this.vocab.pre.ignoreMerges || word.length === 1)) return [whole];

    // Byte-alphabet characters are all in the BMP: one UTF-16 unit per symbol.
    const n = word.length;
    const len = new Array<number>(n).fill(1);
    const prev = Array.from({ length: n }, (_, i) => i - 1);
    const next = Array.from({ length: n }, (_, i) => (i + 1 < n ? i + 1 : -1));

    const queue = this.queue;
    const tryAdd = (left: number, right: number) => {
      if (left < 0 || right < 0) return;
      const rank = ranks.get(word.substr(left, len[left]) + " " + word.substr(right, len[right]));
      if (rank !== undefined) queue.push(rank, left, right, len[left] + len[right]);
    };
    for (let i = 1; i < n; i++) tryAdd(i - 1, i);

    while (queue.pop()) {
      const { left, right, mergedSize: size } = queue;
      if (len[left] === 0 || len[right] === 0 || len[left] + len[right] !== size) continue;
      len[left] = size;
      len[right] = 0;
      next[left] = next[right];
      if (next[right] >= 0) prev[next[right]] = left;
      tryAdd(prev[left], left);
      tryAdd(left, next[left]);
    }

    const result: number[] = [];
    for (let i = 0; i !== -1; i = next[i]) {
      const piece = word.substr(i, len[i]);
      const id = ids.get(piece);
      if (id !== undefined) {
        result.push(id);
        continue;
      }
      // A piece outside the vocabulary: llama.cpp looks up each of its UTF-8 bytes as a
      // one-character token, which only ASCII characters can be.
      for (const ch of piece) {
        const single = ch.charCodeAt(0) < 0x80 ? ids.get(ch) : undefined;
        if (single !== undefined) result.push(single);
      }
    }
    return result;
  }
}
