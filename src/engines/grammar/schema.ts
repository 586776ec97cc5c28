// JSON Schema → GBNF: a grammar whose sentences are exactly (or a safe subset of) the JSON texts
// that validate against the schema. Every sentence must validate, so where a keyword can only be
// approximated the grammar errs on the narrow side (documented in docs/serve.md); a keyword that
// cannot be honoured at all is refused with an error naming it, never ignored.
//
// Supported: type (and lists of types), properties, required, additionalProperties, enum, const,
// items, minItems, maxItems, anyOf / oneOf, allOf of one schema, $ref to #/$defs or #/definitions,
// string minLength / maxLength and formats date, time, date-time, uuid, number and integer
// minimum / maximum / exclusiveMinimum / exclusiveMaximum.
//
// Output is compact-ish JSON: properties in the schema's order (required ones first), between
// tokens nothing, one space, or one newline and an indentation of at most 16 spaces (so a model
// cannot loop on blank lines or spend its tokens on layout), numbers of at most 16 digits.

import { UsageError } from "../../errors.js";

type Schema = boolean | { [key: string]: unknown };

/** Any JSON value, and the rules it needs. */
const JSON_RULES: Record<string, string> = {
  ws: '(" " | "\\n" " "{0,16})?',
  char: '[^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  string: '"\\"" char* "\\""',
  integer: '"-"? ("0" | [1-9] [0-9]{0,15})',
  number: 'integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?',
  boolean: '"true" | "false"',
  null: '"null"',
  value: "object | array | string | number | boolean | null",
  object: '"{" ws (string ws ":" ws value ws ("," ws string ws ":" ws value ws)*)? "}"',
  array: '"[" ws (value ws ("," ws value ws)*)? "]"',
};

/** Dependencies among the fixed rules (a rule pulls in the ones it uses). */
const USES: Record<string, string[]> = {
  string: ["char"], number: ["integer"], value: ["object", "array", "string", "number", "boolean", "null"],
  object: ["ws", "string", "value"], array: ["ws", "value"],
  date: ["leap-year"], "date-time": ["date", "time"],
};

const FORMAT_RULES: Record<string, string> = {
  "leap-year": '[0-9] [0-9] ([02468] [48] | [13579] [26] | [2468] "0") | ([02468] [048] | [13579] [26]) "00"',
  date: '[0-9]{4} "-" (("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8])) | leap-year "-02-29"',
  time: '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])',
  "date-time": 'date "T" time',
  uuid: '[0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}',
};

/** Keywords that only annotate (no effect on which values are valid). */
const ANNOTATIONS = new Set(["title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict"]);
const HANDLED = new Set(["type", "properties", "required", "additionalProperties", "enum", "const", "items", "minItems", "maxItems", "anyOf", "oneOf", "allOf", "$ref", "format", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]);

/** The grammar (GBNF text) of any JSON object: response_format {"type": "json_object"}. */
export function jsonObjectGbnf(): string {
  return new SchemaCompiler({}, "response_format").gbnf({ type: "object" });
}

/** The grammar of the JSON texts that validate against `schema`. `where` names it in errors. */
export function schemaToGbnf(schema: unknown, where = "schema"): string {
  if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
    throw new UsageError(`${where}: a JSON Schema must be an object`);
  }
  return new SchemaCompiler(schema as Schema, where).gbnf(schema as Schema);
}

/** A GBNF string literal of some text ("..." with escapes). */
export function gbnfLiteral(text: string): string {
  return `"${[...text].map((c) => (c === '"' ? '\\"' : c === "\\" ? "\\\\" : c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\t" ? "\\t" : c < " " ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}` : c)).join("")}"`;
}

export class SchemaCompiler {
  /** Rules in the order they were made (root first). */
  private rules = new Map<string, string>();
  private byBody = new Map<string, string>();
  private refs = new Map<string, string>();

  constructor(private rootSchema: Schema, private where: string) {}

  gbnf(schema: Schema): string {
    this.rules.set("root", ""); // keep root first
    this.rules.set("root", this.expr(schema, this.where, "root"));
    return [...this.rules].map(([n, b]) => `${n} ::= ${b}`).join("\n") + "\n";
  }

  /** Use one of the fixed rules (and what it needs). */
  fixed(name: string): string {
    if (!this.rules.has(name)) {
      this.rules.set(name, JSON_RULES[name] ?? FORMAT_RULES[name]);
      for (const dep of USES[name] ?? []) this.fixed(dep);
    }
    return name;
  }

  /** A named rule for an expression (the same body gets the same name). */
  private rule(hint: string, body: string): string {
    const known = this.byBody.get(body);
    if (known) return known;
    let name = hint.replace(/[^A-Za-z0-9-]+/g, "-").replace(/^-+|-+$/g, "") || "r";
    for (let i = 2; this.rules.has(name) || name in JSON_RULES || name in FORMAT_RULES; i++) name = `${hint.replace(/[^A-Za-z0-9-]+/g, "-")}-${i}`;
    this.rules.set(name, body);
    this.byBody.set(body, name);
    return name;
  }

  private fail(path: string, what: string): never {
    throw new UsageError(`${path}: ${what}`);
  }

  /** A GBNF expression for the values valid against `s`. */
  expr(s: Schema, path: string, hint: string): string {
    if (s === true) return this.fixed("value");
    if (s === false) this.fail(path, "the schema false allows no value");
    if (typeof s !== "object" || s === null || Array.isArray(s)) this.fail(path, "expected a schema (an object or a boolean)");
    for (const k of Object.keys(s)) {
      if (!HANDLED.has(k) && !ANNOTATIONS.has(k)) this.fail(`${path}.${k}`, `the JSON Schema keyword "${k}" is not supported for structured output`);
    }
    if (s.$ref !== undefined) return this.ref(s.$ref, path);
    if (s.const !== undefined) return gbnfLiteral(JSON.stringify(s.const));
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) this.fail(`${path}.enum`, "expected a non-empty array");
      return this.rule(`${hint}-enum`, s.enum.map((v) => gbnfLiteral(JSON.stringify(v))).join(" | "));
    }
    const any = s.anyOf ?? s.oneOf;
    if (any !== undefined) {
      const key = s.anyOf !== undefined ? "anyOf" : "oneOf";
      if (!Array.isArray(any) || any.length === 0) this.fail(`${path}.${key}`, "expected a non-empty array of schemas");
      const { [key]: _, ...rest } = s;
      const siblings = Object.keys(rest).filter((k) => !ANNOTATIONS.has(k));
      if (siblings.length > 0) this.fail(`${path}.${key}`, `"${key}" together with ${siblings.map((k) => `"${k}"`).join(", ")} is not supported; put them inside each alternative`);
      return this.rule(hint, any.map((x, i) => this.expr(x as Schema, `${path}.${key}[${i}]`, `${hint}-${i}`)).join(" | "));
    }
    if (s.allOf !== undefined) {
      if (!Array.isArray(s.allOf) || s.allOf.length !== 1) this.fail(`${path}.allOf`, "only an allOf of exactly one schema is supported");
      return this.expr(s.allOf[0] as Schema, `${path}.allOf[0]`, hint);
    }
    let type = s.type;
    if (type === undefined) type = s.properties !== undefined || s.additionalProperties !== undefined ? "object" : s.items !== undefined ? "array" : undefined;
    if (type === undefined) return this.fixed("value");
    if (Array.isArray(type)) return this.rule(hint, type.map((t) => this.expr({ ...s, type: t }, path, `${hint}-${t}`)).join(" | "));
    switch (type) {
      case "object": return this.object(s, path, hint);
      case "array": return this.array(s, path, hint);
      case "string": return this.string(s, path, hint);
      case "integer": case "number": return this.number(s, type as "integer" | "number", path, hint);
      case "boolean": return this.fixed("boolean");
      case "null": return this.fixed("null");
      default: this.fail(`${path}.type`, `unknown type ${JSON.stringify(type)}`);
    }
  }

  private ref(ref: unknown, path: string): string {
    if (typeof ref !== "string") this.fail(`${path}.$ref`, "expected a string");
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    if (!m) this.fail(`${path}.$ref`, `only references to "#/$defs/NAME" or "#/definitions/NAME" are supported, got ${JSON.stringify(ref)}`);
    let name = this.refs.get(ref);
    if (name) return name;
    const defs = (this.rootSchema as Record<string, unknown>)[m[1]] as Record<string, unknown> | undefined;
    const target = defs?.[m[2]];
    if (target === undefined) this.fail(`${path}.$ref`, `${JSON.stringify(ref)} names no definition`);
    // Reserve the name first: a definition may refer to itself.
    name = this.rule(`def-${m[2]}`, `<pending ${ref}>`);
    this.refs.set(ref, name);
    const body = this.expr(target as Schema, `${this.where}.${m[1]}.${m[2]}`, name);
    this.rules.set(name, body);
    return name;
  }

  private object(s: Record<string, unknown>, path: string, hint: string): string {
    const props = (s.properties ?? {}) as Record<string, Schema>;
    if (typeof props !== "object" || props === null || Array.isArray(props)) this.fail(`${path}.properties`, "expected an object");
    const required = (s.required ?? []) as string[];
    if (!Array.isArray(required) || required.some((r) => typeof r !== "string")) this.fail(`${path}.required`, "expected an array of property names");
    const names = [...Object.keys(props), ...required.filter((r) => !(r in props))];
    const ws = this.fixed("ws");
    const kv = (name: string) => `${gbnfLiteral(JSON.stringify(name))} ${ws} ":" ${ws} ${this.expr(props[name] ?? true, `${path}.properties.${name}`, `${hint}-${name}`)}`;
    // additionalProperties: false or absent with properties given → no other keys; true, a
    // schema, or absent without properties → other keys (any string) with such values.
    const extra = s.additionalProperties;
    const extraSchema: Schema | undefined = extra === false ? undefined : extra === undefined ? (s.properties === undefined ? true : undefined) : (extra as Schema);
    if (extraSchema !== undefined && names.length === 0 && extraSchema === true) return this.fixed("object");
    const req = names.filter((n) => required.includes(n)).map(kv);
    const opt = names.filter((n) => !required.includes(n)).map(kv);
    if (extraSchema !== undefined) {
      const value = this.expr(extraSchema, `${path}.additionalProperties`, `${hint}-extra`);
      const pair = `${this.fixed("string")} ${ws} ":" ${ws} ${value}`;
      opt.push(`${pair} (${ws} "," ${ws} ${pair})*`);
    }
    // Optional members in order, each present or not: opt_i ::= m_i (, opt_i+1)? | opt_i+1
    let tail = "";
    for (let i = opt.length - 1; i >= 0; i--) {
      tail = tail === "" ? this.rule(`${hint}-opt`, opt[i]) : this.rule(`${hint}-opt`, `${opt[i]} (${ws} "," ${ws} ${tail})? | ${tail}`);
    }
    const body = req.length > 0
      ? `"{" ${ws} ${req.join(` ${ws} "," ${ws} `)}${tail ? ` (${ws} "," ${ws} ${tail})?` : ""} ${ws} "}"`
      : `"{" ${ws} ${tail ? `(${tail} ${ws})? ` : ""}"}"`;
    return this.rule(hint, body);
  }

  private array(s: Record<string, unknown>, path: string, hint: string): string {
    const min = this.count(s.minItems, `${path}.minItems`) ?? 0;
    const max = this.count(s.maxItems, `${path}.maxItems`) ?? Infinity;
    if (max < min) this.fail(`${path}.maxItems`, "is below minItems");
    if (Array.isArray(s.items)) this.fail(`${path}.items`, "tuple items (an array of schemas) are not supported");
    const ws = this.fixed("ws");
    if (max === 0) return this.rule(hint, `"[" ${ws} "]"`);
    const item = this.expr((s.items ?? true) as Schema, `${path}.items`, `${hint}-item`);
    const more = (lo: number, hi: number) => (hi === 0 ? "" : ` (${ws} "," ${ws} ${item})${hi === Infinity ? (lo === 0 ? "*" : `{${lo},}`) : lo === hi ? `{${lo}}` : `{${lo},${hi}}`}`);
    const body = min >= 1
      ? `"[" ${ws} ${item}${more(min - 1, max - 1)} ${ws} "]"`
      : `"[" ${ws} (${item}${more(0, max - 1)} ${ws})? "]"`;
    return this.rule(hint, body);
  }

  private string(s: Record<string, unknown>, path: string, hint: string): string {
    const min = this.count(s.minLength, `${path}.minLength`) ?? 0;
    const max = this.count(s.maxLength, `${path}.maxLength`) ?? Infinity;
    if (max < min) this.fail(`${path}.maxLength`, "is below minLength");
    if (s.format !== undefined) {
      if (typeof s.format !== "string" || !(s.format in FORMAT_RULES) || s.format === "leap-year") {
        this.fail(`${path}.format`, `the string format ${JSON.stringify(s.format)} is not supported (supported: date, time, date-time, uuid)`);
      }
      if (s.minLength !== undefined || s.maxLength !== undefined) this.fail(path, "format together with minLength / maxLength is not supported");
      return this.rule(`${hint}-${s.format}`, `"\\"" ${this.fixed(s.format)} "\\""`);
    }
    if (min === 0 && max === Infinity) return this.fixed("string");
    this.fixed("char");
    // A character of the grammar is one JSON-escaped character: one code point (or one escape;
    // a \u escape of half a surrogate pair counts as one, as JavaScript's length counts them).
    const rep = max === Infinity ? `{${min},}` : min === max ? `{${min}}` : `{${min},${max}}`;
    return this.rule(hint, `"\\"" char${rep} "\\""`);
  }

  private number(s: Record<string, unknown>, type: "integer" | "number", path: string, hint: string): string {
    const bound = (k: string): number | undefined => {
      const v = s[k];
      if (v === undefined) return undefined;
      if (typeof v !== "number" || !Number.isFinite(v)) this.fail(`${path}.${k}`, "expected a number");
      return v;
    };
    const min = bound("minimum"), max = bound("maximum"), xmin = bound("exclusiveMinimum"), xmax = bound("exclusiveMaximum");
    if (min === undefined && max === undefined && xmin === undefined && xmax === undefined) return this.fixed(type);
    // The integers allowed: [lo, hi].
    const lo = Math.max(min !== undefined ? Math.ceil(min) : -Infinity, xmin !== undefined ? Math.floor(xmin) + 1 : -Infinity);
    const hi = Math.min(max !== undefined ? Math.floor(max) : Infinity, xmax !== undefined ? Math.ceil(xmax) - 1 : Infinity);
    const options: string[] = [];
    if (lo <= hi) options.push(intRange(lo, hi));
    if (type === "number") {
      // k.ddd (a fraction that does not end in 0, so the value lies strictly between k and k+1):
      // allowed when the whole interval [k, k+1] is within the bounds.
      const fmin = Math.max(min ?? -Infinity, xmin ?? -Infinity), fmax = Math.min(max ?? Infinity, xmax ?? Infinity);
      const fraction = '"." [0-9]{0,15} [1-9]';
      const posLo = Math.max(0, Math.ceil(fmin)), posHi = Math.floor(fmax) - 1;
      if (posLo <= posHi) options.push(`(${natRange(posLo, posHi)}) ${fraction}`);
      // -k.ddd lies in (-(k+1), -k): needs -(k+1) >= fmin and -k <= fmax.
      const negLo = Math.max(0, Math.ceil(-fmax)), negHi = Math.floor(-fmin) - 1;
      if (negLo <= negHi) options.push(`"-" (${natRange(negLo, negHi)}) ${fraction}`);
    }
    if (options.length === 0) this.fail(path, "the bounds allow no value");
    return this.rule(`${hint}-${type}`, options.join(" | "));
  }

  private count(v: unknown, path: string): number | undefined {
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) this.fail(path, "expected a non-negative integer");
    if (v > 1000) this.fail(path, "counts above 1000 are not supported");
    return v;
  }
}

const MAX_DIGITS = 16;

/** GBNF for the integers in [lo, hi] (either end may be infinite), without leading zeros or "-0". */
export function intRange(lo: number, hi: number): string {
  const parts: string[] = [];
  if (lo < 0) parts.push(`"-" (${natRange(Math.max(1, -hi), -lo)})`);
  if (hi >= 0) parts.push(natRange(Math.max(0, lo), hi));
  return parts.join(" | ");
}

/** GBNF for the natural numbers in [a, b] (b may be Infinity: up to 16 digits). */
export function natRange(a: number, b: number): string {
  const alts: string[] = [];
  const digits = (n: number) => String(n).length;
  const top = b === Infinity ? 10 ** MAX_DIGITS - 1 : b;
  for (let d = digits(a); d <= digits(top); d++) {
    const from = Math.max(a, d === 1 ? 0 : 10 ** (d - 1)), to = Math.min(top, 10 ** d - 1);
    if (from <= to) alts.push(sameLength(String(from), String(to)));
  }
  return alts.join(" | ");
}

/** Digit strings of one length from x to y (x <= y), as a GBNF expression. */
function sameLength(x: string, y: string): string {
  const n = x.length;
  if (n === 1) return x === y ? `"${x}"` : `[${x}-${y}]`;
  if (x[0] === y[0]) return `"${x[0]}" (${sameLength(x.slice(1), y.slice(1))})`;
  const zeros = "0".repeat(n - 1), nines = "9".repeat(n - 1);
  const alts: string[] = [];
  let first = Number(x[0]), last = Number(y[0]);
  if (x.slice(1) !== zeros) { alts.push(`"${x[0]}" (${sameLength(x.slice(1), nines)})`); first++; }
  if (y.slice(1) !== nines) { alts.push(`"${y[0]}" (${sameLength(zeros, y.slice(1))})`); last--; }
  if (first <= last) alts.push(`${first === last ? `"${first}"` : `[${first}-${last}]`} [0-9]{${n - 1}}`);
  return alts.join(" | ");
}
