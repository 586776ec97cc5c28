// Special-token matching: before any merging, the raw text is cut at every occurrence of a
// special token's text, longest tokens first (llama.cpp's tokenizer_st_partition). Control tokens
// are matched only when the caller asks to parse special text; user-defined tokens always are.

import type { SpecialToken } from "./vocab.js";

/** A piece of text still to tokenize, or a token id already decided. */
export type Fragment = string | number;

const isSpace = (c: string) => c === " " || (c >= "\t" && c <= "\r"); // C isspace

export function partition(text: string, specials: readonly SpecialToken[], parseSpecial: boolean): Fragment[] {
  if (text.length === 0) return [];
  let frags: Fragment[] = [text];
  for (const sp of specials) {
    if (!parseSpecial && !sp.always) continue;
    const next: Fragment[] = [];
    for (const f of frags) {
      if (typeof f === "number" || !f.includes(sp.text)) {
        next.push(f);
        continue;
      }
      let from = 0;
      for (;;) {
        const at = f.indexOf(sp.text, from);
        if (at < 0) break;
        let leftEnd = at;
        if (sp.lstrip) while (leftEnd > from && isSpace(f[leftEnd - 1])) leftEnd--;
        if (leftEnd > from) next.push(f.slice(from, leftEnd));
        next.push(sp.id);
        from = at + sp.text.length;
        if (sp.rstrip) while (from < f.length && isSpace(f[from])) from++;
      }
      if (from < f.length) next.push(f.slice(from));
    }
    frags = next;
  }
  return frags;
}
