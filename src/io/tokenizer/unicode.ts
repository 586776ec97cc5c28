// Unicode character classes as llama.cpp's tokenizer sees them: one general category per code point
// (letter, number, punctuation, mark, symbol, or "other"), plus the White_Space property.
// The pre-tokenizer regexes are written against these classes, so we compute them once per code
// point and cache the answer.

export const enum Cat {
  Other = 1, // control, format, separator that is not white space, unassigned
  Number = 2,
  Letter = 3,
  Punctuation = 4,
  Mark = 5,
  Symbol = 6,
  Whitespace = 7, // White_Space takes precedence over the general category
}

// The White_Space property (Unicode PropList.txt): what llama.cpp's `is_whitespace` flag holds.
// JavaScript's \s differs (it adds U+FEFF and drops U+0085), so we never rely on it.
const WHITESPACE = new Set<number>([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680,
  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

const RE_L = /\p{L}/u, RE_N = /\p{N}/u, RE_P = /\p{P}/u, RE_M = /\p{M}/u, RE_S = /\p{S}/u;

const cache = new Uint8Array(0x110000); // 0 = not yet computed

function classify(cp: number): Cat {
  if (WHITESPACE.has(cp)) return Cat.Whitespace;
  const ch = String.fromCodePoint(cp);
  if (RE_L.test(ch)) return Cat.Letter;
  if (RE_N.test(ch)) return Cat.Number;
  if (RE_P.test(ch)) return Cat.Punctuation;
  if (RE_M.test(ch)) return Cat.Mark;
  if (RE_S.test(ch)) return Cat.Symbol;
  return Cat.Other;
}

export function category(cp: number): Cat {
  let c = cache[cp];
  if (c === 0) c = cache[cp] = classify(cp);
  return c as Cat;
}

/** The code points of a string (lone surrogates become U+FFFD, as UTF-8 encoding would make them). */
export function codePoints(text: string): Uint32Array {
  const out = new Uint32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out[n++] = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        continue;
      }
    }
    out[n++] = c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
  }
  return out.subarray(0, n);
}
