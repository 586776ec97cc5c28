// Pre-tokenization for byte-level BPE: the regexes that cut text into words before merging, one
// list per `tokenizer.ggml.pre` value, applied as llama.cpp's `unicode_regex_split` applies them.
//
// Each regex of a list splits every piece the previous one produced; text a regex does not match
// becomes a piece of its own. Where a regex names Unicode classes (\p{L}, \p{N}, ...), llama.cpp
// matches it against a "collapsed" copy of the text in which every non-ASCII code point is replaced
// by one stand-in per class (and non-ASCII white space by \v); we do the same, with private-use
// characters as the stand-ins, so that classes, white space and the odd corners (`\p{S}` leaves out
// ASCII `~`) agree with llama.cpp rather than with JavaScript's own tables.

import { Cat, category, codePoints } from "./unicode.js";

const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`;
const LLAMA3 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const QWEN2 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const CJK = String.raw`[\u{4e00}-\u{9fa5}\u{800}-\u{4e00}\u{ac00}-\u{d7ff}]+`;
// DeepSeek LLM's cased letters (Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ...).
const DEEPSEEK_LETTERS = String.raw`\s?[A-Za-z\u{b5}\u{c0}-\u{d6}\u{d8}-\u{f6}\u{f8}-\u{1ba}\u{1bc}-\u{1bf}\u{1c4}-\u{293}\u{295}-\u{2af}\u{370}-\u{373}\u{376}\u{377}\u{37b}-\u{37d}\u{37f}\u{386}\u{388}-\u{38a}\u{38c}\u{38e}-\u{3a1}\u{3a3}-\u{3f5}\u{3f7}-\u{481}\u{48a}-\u{52f}\u{531}-\u{556}\u{10a0}-\u{10c5}\u{13a0}-\u{13f5}\u{13f8}-\u{13fd}\u{1c90}-\u{1cba}\u{1cbd}-\u{1cbf}\u{1d00}-\u{1d2b}\u{1d6b}-\u{1d77}\u{1d79}-\u{1d9a}\u{1e00}-\u{1f15}\u{1f18}-\u{1f1d}\u{1f20}-\u{1f45}\u{1f48}-\u{1f4d}\u{1f50}-\u{1f57}\u{1f59}\u{1f5b}\u{1f5d}\u{1f5f}-\u{1f7d}\u{1f80}-\u{1fb4}\u{1fb6}-\u{1fbc}\u{1fbe}\u{1fc2}-\u{1fc4}\u{1fc6}-\u{1fcc}\u{1fd0}-\u{1fd3}\u{1fd6}-\u{1fdb}\u{1fe0}-\u{1fec}\u{1ff2}-\u{1ff4}\u{1ff6}-\u{1ffc}\u{2102}\u{2107}\u{210a}-\u{2113}\u{2115}\u{2119}-\u{211d}\u{2124}\u{2126}\u{2128}\u{212a}-\u{212d}\u{212f}-\u{2134}\u{2139}\u{213c}-\u{213f}\u{2145}-\u{2149}\u{214e}\u{2183}\u{2184}\u{2c00}-\u{2c7b}\u{2c7e}-\u{2ce4}\u{2ceb}-\u{2cee}\u{2cf2}\u{2cf3}\u{a640}-\u{a66d}\u{a680}-\u{a69b}\u{a722}-\u{a76f}\u{a771}-\u{a787}\u{a78b}-\u{a78e}\u{ab70}-\u{abbf}\u{fb00}-\u{fb06}\u{fb13}-\u{fb17}\u{ff21}-\u{ff3a}\u{ff41}-\u{ff5a}\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+`;
const DEEPSEEK_PUNCT = String.raw`\s?[!-/:-~\u{ff01}-\u{ff0f}\u{ff1a}-\u{ff5e}\u{2018}-\u{201f}\u{3000}-\u{3002}]+`;

/** How one family of vocabularies pre-tokenizes, and the llama.cpp flags that go with it. */
export interface PreTokenizer {
  /** The family name (the llama.cpp pre-type); "default" also for names we do not know. */
  type: string;
  regexes: string[];
  /** Detokenize with HF's clean_up_tokenization_spaces (" ," -> ","). */
  cleanSpaces: boolean;
  /** A whole pre-token that is in the vocabulary is used as is, without merging. */
  ignoreMerges: boolean;
  /** The family adds BOS unless the file says otherwise. */
  addBos: boolean;
}

const FAMILIES: Record<string, Omit<PreTokenizer, "type">> = {
  default: { regexes: [String.raw`[\p{P}\$\+<=>\^~\|]+`, GPT2, String.raw`\p{N}+`, "[0-9][0-9][0-9]"], cleanSpaces: true, ignoreMerges: false, addBos: false },
  llama3: { regexes: [LLAMA3], cleanSpaces: true, ignoreMerges: true, addBos: true },
  "deepseek-llm": { regexes: [String.raw`[\r\n]`, DEEPSEEK_LETTERS, DEEPSEEK_PUNCT, String.raw`\s+$`, CJK, String.raw`\p{N}+`], cleanSpaces: false, ignoreMerges: false, addBos: false },
  "deepseek-coder": { regexes: [String.raw`[\r\n]`, String.raw`\s?\p{L}+`, String.raw`\s?\p{P}+`, CJK, String.raw`\p{N}`], cleanSpaces: false, ignoreMerges: false, addBos: false },
  falcon: { regexes: [String.raw`[\p{P}\$\+<=>\^~\|` + "`]+", GPT2, "[0-9][0-9][0-9]"], cleanSpaces: true, ignoreMerges: false, addBos: false },
  gpt2: { regexes: [GPT2], cleanSpaces: true, ignoreMerges: false, addBos: false },
  // starcoder, refact, smollm, ...: every digit is a word of its own, then GPT-2's split.
  starcoder: { regexes: [String.raw`\p{N}`, GPT2], cleanSpaces: true, ignoreMerges: false, addBos: false },
  qwen2: { regexes: [QWEN2], cleanSpaces: false, ignoreMerges: false, addBos: false },
  chatglm4: { regexes: [LLAMA3], cleanSpaces: true, ignoreMerges: false, addBos: false },
};

/** `tokenizer.ggml.pre` value -> family, with the per-name flag overrides llama.cpp applies. */
const NAMES: Record<string, [family: string, overrides?: Partial<PreTokenizer>]> = {
  default: ["default"],
  llama3: ["llama3"], "llama-v3": ["llama3"], "llama-bpe": ["llama3"], falcon3: ["llama3"], pixtral: ["llama3"],
  dbrx: ["llama3", { ignoreMerges: false, addBos: false }], "smaug-bpe": ["llama3", { ignoreMerges: false, addBos: false }],
  "deepseek-llm": ["deepseek-llm"],
  "deepseek-coder": ["deepseek-coder"],
  falcon: ["falcon"],
  mpt: ["gpt2"], "gpt-2": ["gpt2"], "phi-2": ["gpt2"], olmo: ["gpt2"], jais: ["gpt2"], exaone4: ["gpt2"],
  starcoder: ["starcoder"], refact: ["starcoder"], codeshell: ["starcoder"], exaone: ["starcoder"], "minerva-7b": ["starcoder"],
  smollm: ["starcoder", { cleanSpaces: false }], "command-r": ["starcoder", { cleanSpaces: false }],
  qwen2: ["qwen2"], "deepseek-r1-qwen": ["qwen2"], stablelm2: ["qwen2", { cleanSpaces: true }], megrez: ["qwen2", { cleanSpaces: true }],
  "chatglm-bpe": ["chatglm4"], glm4: ["chatglm4"],
};

/** The pre-tokenizer for a `tokenizer.ggml.pre` value; unknown names fall back to "default". */
export function preTokenizer(name: string | undefined): PreTokenizer {
  const entry = NAMES[name ?? "default"] ?? NAMES.default;
  const [family, overrides] = entry;
  return { type: family, ...FAMILIES[family], ...overrides };
}

// --- applying the regexes ---------------------------------------------------------------------

/** The stand-in for each class in the collapsed text, and the ASCII members of the class (ASCII
 *  code points are kept as they are). Mirrors llama.cpp's k_ucat_cpt / k_ucat_map. */
const STAND_IN: Partial<Record<Cat, number>> = {
  [Cat.Other]: 0xe000, [Cat.Number]: 0xe001, [Cat.Letter]: 0xe002, [Cat.Punctuation]: 0xe003,
  [Cat.Mark]: 0xe004, [Cat.Symbol]: 0xe005,
};
const CLASSES: Record<string, string> = {
  N: String.raw`\ue0010-9`,
  L: String.raw`\ue002A-Za-z`,
  P: String.raw`\ue003!-#%-*,-/:-;?-@\[-\]_\{\}`,
  M: String.raw`\ue004`,
  S: String.raw`\ue005\$\+<->\^` + "`" + String.raw`\|`,
};
const CLASS_OF: Record<string, string> = { N: "N", L: "L", P: "P", M: "M", S: "S", Lu: "L", Ll: "L", Lt: "L", Lm: "L", Lo: "L" };
const SPACE = String.raw`\t-\r `; // C's isspace, which is what std::regex's \s means

interface Compiled {
  re: RegExp;
  /** Matched against the collapsed text (the regex names Unicode classes). */
  collapsed: boolean;
}

/** Rewrites one llama.cpp regex for JavaScript: \p{..} becomes the collapsed-text class, \s and \S
 *  become C's white space. Regexes without \p{..} run on the real text (with the `u` flag). */
function compile(expr: string): Compiled {
  // llama.cpp runs GPT-2's pattern through a hand-written splitter that also takes a lone \s+.
  if (expr === GPT2) expr += String.raw`|\s+`;
  const collapsed = /\\p\{(N|L|P|M|S|Lu|Ll|Lt|Lm|Lo)\}/.test(expr);
  let out = "";
  let inside = false;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (c === "[" && (i === 0 || expr[i - 1] !== "\\")) { inside = true; out += c; continue; }
    if (c === "]" && inside && expr[i - 1] !== "\\") { inside = false; out += c; continue; }
    if (c === "\\" && expr[i + 1] === "p" && expr[i + 2] === "{") {
      const close = expr.indexOf("}", i + 3);
      const cls = CLASS_OF[expr.slice(i + 3, close)];
      if (collapsed && cls) {
        out += inside ? CLASSES[cls] : `[${CLASSES[cls]}]`;
        i = close;
        continue;
      }
    }
    if (c === "\\" && (expr[i + 1] === "s" || expr[i + 1] === "S")) {
      const negate = expr[i + 1] === "S";
      out += inside ? (negate ? "\\S" : SPACE) : `[${negate ? "^" : ""}${SPACE}]`;
      i++;
      continue;
    }
    if (c === "\\") { out += c + expr[i + 1]; i++; continue; }
    out += c;
  }
  return { re: new RegExp(out, collapsed ? "g" : "gu"), collapsed };
}

/** Text prepared once for all of a list's regexes. */
class SplitText {
  readonly cps: Uint32Array;
  /** UTF-16 offset of each code point (and of the end) in the original text. */
  readonly offset16: Uint32Array;
  private collapsedText?: string;
  private wideText?: string;
  private cpAt16?: Uint32Array;

  constructor(readonly text: string) {
    this.cps = codePoints(text);
    this.offset16 = new Uint32Array(this.cps.length + 1);
    let o = 0;
    for (let i = 0; i < this.cps.length; i++) {
      this.offset16[i] = o;
      o += this.cps[i] > 0xffff ? 2 : 1;
    }
    this.offset16[this.cps.length] = o;
  }

  /** One UTF-16 unit per code point: ASCII as is, the rest as their class's stand-in. */
  collapsed(): string {
    if (this.collapsedText === undefined) {
      const units = new Uint16Array(this.cps.length);
      for (let i = 0; i < this.cps.length; i++) {
        const cp = this.cps[i];
        if (cp < 128) units[i] = cp;
        else {
          const cat = category(cp);
          units[i] = cat === Cat.Whitespace ? 0x0b : STAND_IN[cat]!;
        }
      }
      let s = "";
      for (let i = 0; i < units.length; i += 8192) s += String.fromCharCode(...units.subarray(i, i + 8192));
      this.collapsedText = s;
    }
    return this.collapsedText;
  }

  /** The real text with non-ASCII white space as \v (what llama.cpp hands std::wregex). */
  wide(): { text: string; cpAt16: Uint32Array } {
    if (this.wideText === undefined) {
      let s = "";
      const cpAt16 = new Uint32Array(this.offset16[this.cps.length] + 1);
      for (let i = 0; i < this.cps.length; i++) {
        const cp = this.cps[i];
        s += cp > 127 && category(cp) === Cat.Whitespace ? "\v" : String.fromCodePoint(cp);
        cpAt16[this.offset16[i]] = i;
        if (cp > 0xffff) cpAt16[this.offset16[i] + 1] = i;
      }
      cpAt16[this.offset16[this.cps.length]] = this.cps.length;
      this.wideText = s;
      this.cpAt16 = cpAt16;
    }
    return { text: this.wideText, cpAt16: this.cpAt16! };
  }
}

const compiledCache = new Map<string, Compiled>();

/** Cuts text into pre-tokens (substrings of `text`, in order, covering all of it). */
export function splitText(text: string, regexes: readonly string[]): string[] {
  if (text.length === 0) return [];
  const t = new SplitText(text);
  // bounds[i]..bounds[i+1] is piece i, in code points
  let bounds: number[] = [0, t.cps.length];
  for (const expr of regexes) {
    let c = compiledCache.get(expr);
    if (!c) compiledCache.set(expr, (c = compile(expr)));
    bounds = splitPieces(t, c, bounds);
  }
  const words: string[] = new Array(bounds.length - 1);
  for (let i = 0; i + 1 < bounds.length; i++) words[i] = text.slice(t.offset16[bounds[i]], t.offset16[bounds[i + 1]]);
  return words;
}

function splitPieces(t: SplitText, c: Compiled, bounds: number[]): number[] {
  const out: number[] = [0];
  const subject = c.collapsed ? t.collapsed() : undefined;
  const wide = c.collapsed ? undefined : t.wide();
  const re = c.re;
  for (let p = 0; p + 1 < bounds.length; p++) {
    const start = bounds[p], end = bounds[p + 1];
    // The regex sees only this piece: lookaheads and $ stop at its end, as in llama.cpp.
    const piece = subject !== undefined ? subject.slice(start, end) : wide!.text.slice(t.offset16[start], t.offset16[end]);
    const toCp = subject !== undefined ? (i: number) => start + i : (i: number) => wide!.cpAt16[t.offset16[start] + i];
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(piece)) !== null) {
      if (m[0].length === 0) { re.lastIndex++; continue; }
      const a = toCp(m.index), b = toCp(m.index + m[0].length);
      if (a > out[out.length - 1]) out.push(a); // unmatched text before the match is a piece too
      out.push(b);
    }
    if (end > out[out.length - 1]) out.push(end);
  }
  return out;
}
