// SentencePiece BPE as llama.cpp runs it: start from single characters and keep merging the
// adjacent pair whose union is the vocabulary piece with the highest score (leftmost on ties);
// whatever is left that is not a piece is spelled with byte tokens <0xXX>.

import { utf8Bytes } from "./bytes.js";
import { MergeQueue } from "./heap.js";
import type { Vocab } from "./vocab.js";

export class SpmModel {
  /** Byte b -> the id of <0xXX> (or of the one-character piece), -1 when the vocabulary lacks it. */
  private byteIds = new Int32Array(256).fill(-1);

  constructor(private vocab: Vocab) {
    for (let b = 0; b < 256; b++) {
      const hex = `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
      const id = vocab.ids.get(hex) ?? (b < 128 ? vocab.ids.get(String.fromCharCode(b)) : undefined);
      if (id !== undefined) this.byteIds[b] = id;
    }
  }

  /** Tokenizes text whose spaces are already ▁ (U+2581). */
  encode(text: string, out: number[]): void {
    const { ids, scores } = this.vocab;
    // symbols: one per code point, as a doubly linked list over [start, start+len) of `text`
    const start = new Int32Array(text.length), len = new Int32Array(text.length);
    let n = 0;
    for (let i = 0; i < text.length; n++) {
      const c = text.charCodeAt(i);
      const w = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
      start[n] = i;
      len[n] = w;
      i += w;
    }
    if (n === 0) return;
    const prev = new Int32Array(n), next = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }

    // A candidate merge is stale when popped if its symbols no longer add up to its length.
    const queue = new MergeQueue();
    const tryAdd = (left: number, right: number) => {
      if (left < 0 || right < 0) return;
      const size = len[left] + len[right];
      const id = ids.get(text.substr(start[left], size));
      if (id !== undefined) queue.push(-scores[id], left, right, size); // highest score first
    };
    for (let i = 1; i < n; i++) tryAdd(i - 1, i);

    while (queue.pop()) {
      const { left, right, mergedSize: size } = queue;
      if (len[left] === 0 || len[right] === 0 || len[left] + len[right] !== size) continue;
      len[left] = size; // the right symbol joins the left one
      len[right] = 0;
      next[left] = next[right];
      if (next[right] >= 0) prev[next[right]] = left;
      tryAdd(prev[left], left);
      tryAdd(left, next[left]);
    }

    // Every merged symbol is a piece (only pieces are merged), so only single characters can be
    // missing from the vocabulary: those fall back to their UTF-8 bytes.
    for (let i = 0; i !== -1; i = next[i]) {
      const piece = text.substr(start[i], len[i]);
      const id = ids.get(piece);
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      for (const b of utf8Bytes(piece)) {
        const bid = this.byteIds[b];
        if (bid >= 0) out.push(bid);
        else if (this.vocab.unk !== undefined) out.push(this.vocab.unk);
      }
    }
  }
}
