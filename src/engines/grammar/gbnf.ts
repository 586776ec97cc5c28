// Grammars in GBNF, llama.cpp's notation for context-free grammars over characters:
//
//   root   ::= object                  # a rule: a name, "::=", an expression
//   object ::= "{" ws (pair ("," ws pair)*)? "}"
//   pair   ::= string ":" ws value
//   digit  ::= [0-9]                   # character classes, [^...] negated
//   ws     ::= [ \t\n]{0,20}           # repetition: * + ? {m} {m,} {m,n}
//
// This file holds the readable form (an expression tree per rule), its parser and its printer.
// The schema compiler (schema.ts) writes GBNF text; the recognizer (recognizer.ts) compiles the
// tree into the flat form it runs on.

import { UsageError } from "../../errors.js";

/** Inclusive code-point ranges. */
export type CharRange = [lo: number, hi: number];

export type Expr =
  | { type: "chars"; ranges: CharRange[]; negated: boolean } // one character (`.` is [^] negated-empty)
  | { type: "ref"; name: string }
  | { type: "seq"; items: Expr[] } // an empty sequence matches the empty string
  | { type: "alt"; options: Expr[] }
  | { type: "repeat"; expr: Expr; min: number; max: number }; // max Infinity: unbounded

export interface Grammar {
  /** Rules by name, in the order they were defined. */
  rules: Map<string, Expr>;
  root: string;
}

export const literal = (text: string): Expr =>
  ({ type: "seq", items: [...text].map((c) => ({ type: "chars", ranges: [[c.codePointAt(0)!, c.codePointAt(0)!]], negated: false })) });

/** Parse GBNF text. `root` must be defined; every referenced rule must exist. Errors name the line. */
export function parseGbnf(text: string, root = "root"): Grammar {
  const p = new Parser(text);
  const rules = new Map<string, Expr>();
  p.skipSpace(true);
  while (!p.atEnd()) {
    const name = p.name();
    p.skipSpace(false);
    p.expect("::=");
    if (rules.has(name)) p.fail(`rule "${name}" is defined twice`);
    rules.set(name, p.alternatives(false));
    p.skipSpace(true);
  }
  if (!rules.has(root)) throw new UsageError(`grammar: no "${root}" rule (the grammar starts there)`);
  for (const [name, expr] of rules) {
    for (const ref of refsOf(expr)) if (!rules.has(ref)) throw new UsageError(`grammar: rule "${name}" uses "${ref}", which is not defined`);
  }
  return { rules, root };
}

function* refsOf(e: Expr): Generator<string> {
  switch (e.type) {
    case "ref": yield e.name; break;
    case "seq": for (const x of e.items) yield* refsOf(x); break;
    case "alt": for (const x of e.options) yield* refsOf(x); break;
    case "repeat": yield* refsOf(e.expr); break;
  }
}

const MAX_REPEAT = 10_000;

class Parser {
  private i = 0;
  constructor(private s: string) {}

  atEnd(): boolean { return this.i >= this.s.length; }

  fail(what: string): never {
    const line = this.s.slice(0, this.i).split("\n").length;
    throw new UsageError(`grammar, line ${line}: ${what} (at ${JSON.stringify(this.s.slice(this.i, this.i + 20))})`);
  }

  /** Skip blanks and comments; newlines too when `newlines` (between rules, inside parentheses). */
  skipSpace(newlines: boolean): void {
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === "#") { while (this.i < this.s.length && this.s[this.i] !== "\n") this.i++; }
      else if (c === " " || c === "\t" || c === "\r" || (newlines && c === "\n")) this.i++;
      else break;
    }
  }

  expect(t: string): void {
    if (!this.s.startsWith(t, this.i)) this.fail(`expected "${t}"`);
    this.i += t.length;
  }

  name(): string {
    const m = /^[A-Za-z0-9_-]+/.exec(this.s.slice(this.i, this.i + 200));
    if (!m) this.fail("expected a rule name");
    this.i += m[0].length;
    return m[0];
  }

  /** a | b | c — ends at a newline (outside parentheses), ")" or the end. */
  alternatives(nested: boolean): Expr {
    const options = [this.sequence(nested)];
    while (this.s[this.i] === "|") {
      this.i++;
      this.skipSpace(true); // a line may end after "|"
      options.push(this.sequence(nested));
    }
    return options.length === 1 ? options[0] : { type: "alt", options };
  }

  private sequence(nested: boolean): Expr {
    const items: Expr[] = [];
    for (;;) {
      this.skipSpace(nested);
      const c = this.s[this.i];
      if (c === undefined || c === "\n" || c === "|" || c === ")") break;
      // A new rule starts on this line without a newline before it? ("a ::= b c ::= d" is an error.)
      items.push(this.postfix(this.primary()));
    }
    return items.length === 1 ? items[0] : { type: "seq", items };
  }

  private primary(): Expr {
    const c = this.s[this.i];
    if (c === '"') {
      this.i++;
      const items: Expr[] = [];
      while (this.s[this.i] !== '"') {
        if (this.atEnd() || this.s[this.i] === "\n") this.fail("unterminated string");
        const cp = this.char();
        items.push({ type: "chars", ranges: [[cp, cp]], negated: false });
      }
      this.i++;
      return { type: "seq", items };
    }
    if (c === "[") {
      this.i++;
      const negated = this.s[this.i] === "^";
      if (negated) this.i++;
      const ranges: CharRange[] = [];
      while (this.s[this.i] !== "]") {
        if (this.atEnd()) this.fail("unterminated character class");
        const lo = this.char();
        let hi = lo;
        if (this.s[this.i] === "-" && this.s[this.i + 1] !== "]") {
          this.i++;
          hi = this.char();
          if (hi < lo) this.fail("a character range runs backwards");
        }
        ranges.push([lo, hi]);
      }
      this.i++;
      return { type: "chars", ranges, negated };
    }
    if (c === ".") { this.i++; return { type: "chars", ranges: [], negated: true }; }
    if (c === "(") {
      this.i++;
      this.skipSpace(true);
      const e = this.alternatives(true);
      this.skipSpace(true);
      this.expect(")");
      return e;
    }
    if (c !== undefined && /[A-Za-z0-9_-]/.test(c)) {
      const name = this.name();
      this.skipSpace(false);
      if (this.s.startsWith("::=", this.i)) this.fail(`rule "${name}" must start on a new line`);
      return { type: "ref", name };
    }
    this.fail("expected a string, a character class, a rule name or \"(\"");
  }

  private postfix(e: Expr): Expr {
    for (;;) {
      const c = this.s[this.i];
      if (c === "*") { this.i++; e = { type: "repeat", expr: e, min: 0, max: Infinity }; }
      else if (c === "+") { this.i++; e = { type: "repeat", expr: e, min: 1, max: Infinity }; }
      else if (c === "?") { this.i++; e = { type: "repeat", expr: e, min: 0, max: 1 }; }
      else if (c === "{") {
        const m = /^\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}/.exec(this.s.slice(this.i, this.i + 40));
        if (!m) this.fail("expected {m}, {m,} or {m,n}");
        const min = Number(m[1]);
        const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
        if (max < min) this.fail("a repetition's maximum is below its minimum");
        if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) this.fail(`repetitions are limited to ${MAX_REPEAT}`);
        this.i += m[0].length;
        e = { type: "repeat", expr: e, min, max };
      } else return e;
    }
  }

  /** One character of a string or class, with escapes: \n \r \t \\ \" \] \xHH \uHHHH \UHHHHHHHH. */
  private char(): number {
    const c = this.s[this.i];
    if (c !== "\\") {
      const cp = this.s.codePointAt(this.i)!;
      this.i += cp > 0xffff ? 2 : 1;
      return cp;
    }
    const e = this.s[this.i + 1];
    this.i += 2;
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, "\\": 92, '"': 34, "]": 93, "[": 91, "-": 45, "^": 94, "/": 47 };
    if (e in simple) return simple[e];
    const width = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
    if (width === 0) this.fail(`unknown escape "\\${e}"`);
    const hex = this.s.slice(this.i, this.i + width);
    if (!new RegExp(`^[0-9a-fA-F]{${width}}$`).test(hex)) this.fail(`"\\${e}" needs ${width} hex digits`);
    this.i += width;
    const cp = parseInt(hex, 16);
    if (cp > 0x10ffff) this.fail("code point beyond U+10FFFF");
    return cp;
  }
}

/** GBNF text of a grammar (what `toy infer --print-grammar` shows). */
export function printGbnf(g: Grammar): string {
  return [...g.rules].map(([name, e]) => `${name} ::= ${printExpr(e, false)}`).join("\n") + "\n";
}

function printExpr(e: Expr, inner: boolean): string {
  switch (e.type) {
    case "ref": return e.name;
    case "chars": {
      if (e.negated && e.ranges.length === 0) return ".";
      if (!e.negated && e.ranges.length === 1 && e.ranges[0][0] === e.ranges[0][1]) return `"${escape(e.ranges[0][0], '"')}"`;
      return `[${e.negated ? "^" : ""}${e.ranges.map(([lo, hi]) => (lo === hi ? escape(lo, "]") : `${escape(lo, "]")}-${escape(hi, "]")}`)).join("")}]`;
    }
    case "seq": {
      if (e.items.length === 0) return '""';
      // Runs of single characters print as one string.
      const parts: string[] = [];
      let text = "";
      for (const x of e.items) {
        if (x.type === "chars" && !x.negated && x.ranges.length === 1 && x.ranges[0][0] === x.ranges[0][1]) text += escape(x.ranges[0][0], '"');
        else {
          if (text) { parts.push(`"${text}"`); text = ""; }
          parts.push(printExpr(x, true));
        }
      }
      if (text) parts.push(`"${text}"`);
      const s = parts.join(" ");
      return inner && parts.length > 1 ? `(${s})` : s;
    }
    case "alt": {
      const s = e.options.map((o) => printExpr(o, false)).join(" | ");
      return inner ? `(${s})` : s;
    }
    case "repeat": {
      const body = printExpr(e.expr, true);
      const wrapped = e.expr.type === "seq" && !body.startsWith("(") && body.includes(" ") ? `(${body})` : body;
      const op = e.min === 0 && e.max === Infinity ? "*" : e.min === 1 && e.max === Infinity ? "+" : e.min === 0 && e.max === 1 ? "?"
        : e.max === Infinity ? `{${e.min},}` : e.min === e.max ? `{${e.min}}` : `{${e.min},${e.max}}`;
      return wrapped + op;
    }
  }
}

function escape(cp: number, quote: string): string {
  const named: Record<number, string> = { 10: "\\n", 13: "\\r", 9: "\\t", 92: "\\\\" };
  if (named[cp]) return named[cp];
  if (String.fromCodePoint(cp) === quote || (quote === "]" && (cp === 0x5b || cp === 0x2d || cp === 0x5e))) return "\\" + String.fromCodePoint(cp);
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, "0")}`;
  return String.fromCodePoint(cp);
}
