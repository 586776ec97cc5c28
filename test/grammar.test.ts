// The structured-output engine (src/engines/grammar/): the GBNF parser and printer, the
// recognizer (character classes, repetition, UTF-8 split across tokens), JSON Schema → grammar
// (every sentence the grammar allows validates with ajv), and token masks over a vocabulary.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parseGbnf, printGbnf } from "../src/engines/grammar/gbnf.js";
import { DEAD, feed, Program, Recognizer } from "../src/engines/grammar/recognizer.js";
import { intRange, jsonObjectGbnf, schemaToGbnf } from "../src/engines/grammar/schema.js";
import { GrammarConstraint, TokenGrammar, VocabTrie } from "../src/engines/grammar/tokenMask.js";
import { Rng } from "../src/data/rng.js";
import { UsageError } from "../src/errors.js";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toy, toyJson } from "./helpers/cli.js";
import { fixtures } from "./helpers/fixtures.js";

const fx = fixtures();

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const utf8 = new TextEncoder();
const recognizer = (gbnf: string) => new Recognizer(new Program(parseGbnf(gbnf)));

/** "accept" (a whole sentence), "prefix" (may continue into one) or "dead". */
function status(r: Recognizer, text: string | Uint8Array): "accept" | "prefix" | "dead" {
  const s = feed(r, r.start, typeof text === "string" ? utf8.encode(text) : text);
  return s === DEAD ? "dead" : r.accepts(s) ? "accept" : "prefix";
}

/** A random sentence of the grammar, built a character at a time from `alphabet` (undefined: stuck). */
function randomSentence(r: Recognizer, rng: Rng, alphabet: string[], maxChars = 400): string | undefined {
  let state = r.start, text = "";
  for (let i = 0; i < maxChars; i++) {
    if (r.complete(state) || (r.accepts(state) && rng.next() < 0.15)) return text;
    const next = alphabet.map((c) => [c, feed(r, state, utf8.encode(c))] as const).filter(([, s]) => s !== DEAD);
    if (next.length === 0) return r.accepts(state) ? text : undefined;
    const [c, s] = next[Math.floor(rng.next() * next.length)];
    text += c;
    state = s;
  }
  return undefined;
}

const ALPHABET = [...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)), "\n", "\t", "é", "日", "😀"];

describe("GBNF", () => {
  test("parses rules, strings, classes, groups, repetition and comments; prints them back", () => {
    const g = parseGbnf(`# a comment
root ::= greeting " " name{1,3} ("!" | "?")*
greeting ::= "hi" | "hello" # trailing comment
name ::= [A-Z] [a-z]+ |
  "\\u00e9\\x41"
`);
    assert.deepEqual([...g.rules.keys()], ["root", "greeting", "name"]);
    const again = parseGbnf(printGbnf(g));
    assert.equal(printGbnf(again), printGbnf(g));
    const r = new Recognizer(new Program(g));
    assert.equal(status(r, "hi Bob"), "accept");
    assert.equal(status(r, "hello BobAnn!?!"), "accept");
    assert.equal(status(r, "hello éA"), "accept");
    assert.equal(status(r, "hi BobAnnEveX"), "dead", "at most 3 names");
    assert.equal(status(r, "hi b"), "dead");
    assert.equal(status(r, "hel"), "prefix");
  });

  test("errors name the line and what is wrong", () => {
    const bad: [string, RegExp][] = [
      ["root ::= foo", /"foo", which is not defined/],
      ["a ::= \"x\"", /no "root" rule/],
      ["root ::= \"x", /line 1: unterminated string/],
      ["root ::= \"a\"\nroot ::= \"b\"", /line 2: rule "root" is defined twice/],
      ["root ::= [b-a]", /runs backwards/],
      ["root ::= x{3,1}\nx ::= \"a\"", /maximum is below its minimum/],
      ["root ::= \"\\q\"", /unknown escape/],
      ["root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", /left-recursive \(expr → expr\)/],
    ];
    for (const [text, want] of bad) {
      assert.throws(() => new Program(parseGbnf(text)), (e: unknown) => e instanceof UsageError && want.test(e.message), text);
    }
  });

  test("UTF-8: a character may be split across tokens; only well-formed UTF-8 that the class allows", () => {
    const r = recognizer('root ::= [^a]{2}');
    const snow = utf8.encode("☃"); // e2 98 83
    let s = feed(r, r.start, snow.subarray(0, 1));
    assert.notEqual(s, DEAD, "a lead byte alone is a prefix");
    assert.equal(r.accepts(s), false);
    s = feed(r, s, snow.subarray(1));
    assert.equal(status(r, Uint8Array.of(...snow, 0x61)), "dead");
    assert.equal(status(r, Uint8Array.of(...snow, ...snow)), "accept");
    assert.equal(status(r, Uint8Array.of(0xc0, 0x80)), "dead", "overlong");
    assert.equal(status(r, Uint8Array.of(0xe0, 0x80)), "dead", "overlong");
    assert.equal(status(r, Uint8Array.of(0xed, 0xa0)), "dead", "surrogate");
    assert.equal(status(r, Uint8Array.of(0xf4, 0x90)), "dead", "beyond U+10FFFF");
    assert.equal(status(r, Uint8Array.of(0x80)), "dead", "a stray continuation byte");
    const ascii = recognizer('root ::= [a-z]+');
    assert.equal(status(ascii, Uint8Array.of(0xc3)), "dead", "no lead byte can start an ASCII-only class");
  });
});

describe("JSON Schema → grammar", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);

  const schemas: Record<string, unknown> = {
    person: {
      type: "object", additionalProperties: false, required: ["name", "age"],
      properties: {
        name: { type: "string", minLength: 1, maxLength: 12 }, age: { type: "integer", minimum: 0, maximum: 120 },
        email: { type: ["string", "null"] }, tags: { type: "array", items: { enum: ["a", "b", 3, null] }, minItems: 1, maxItems: 3 },
      },
    },
    optionalOnly: { type: "object", additionalProperties: false, properties: { a: { type: "boolean" }, b: { const: "x" }, c: { type: "null" } } },
    formats: {
      type: "object", additionalProperties: false, required: ["d", "t", "dt", "u"],
      properties: { d: { type: "string", format: "date" }, t: { type: "string", format: "time" }, dt: { type: "string", format: "date-time" }, u: { type: "string", format: "uuid" } },
    },
    bounds: {
      type: "array", minItems: 2, maxItems: 4,
      items: { anyOf: [{ type: "integer", exclusiveMinimum: -15, maximum: 7 }, { type: "number", minimum: -2.5, exclusiveMaximum: 3 }, { type: "number", minimum: 1000 }] },
    },
    refs: {
      $defs: { node: { type: "object", additionalProperties: false, required: ["v"], properties: { v: { type: "integer" }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } } } },
      $ref: "#/$defs/node",
    },
    extra: { type: "object", properties: { id: { type: "integer" } }, required: ["id"], additionalProperties: { type: "number" } },
    anything: { type: "object" },
  };

  for (const [name, schema] of Object.entries(schemas)) {
    test(`every sentence validates: ${name}`, () => {
      const r = recognizer(schemaToGbnf(schema));
      const validate = ajv.compile(schema as object);
      const rng = new Rng(7);
      let checked = 0;
      for (let i = 0; i < 60; i++) {
        const text = randomSentence(r, rng, ALPHABET);
        if (text === undefined) continue;
        const value = JSON.parse(text);
        assert.ok(validate(value), `${text}\n${JSON.stringify(validate.errors)}`);
        checked++;
      }
      assert.ok(checked >= 20, `${checked} sentences checked`);
    });
  }

  test("known values are accepted or refused as the schema says", () => {
    const person = recognizer(schemaToGbnf(schemas.person));
    assert.equal(status(person, '{"name": "Ann", "age": 120}'), "accept");
    assert.equal(status(person, '{"name": "Ann", "age": 121}'), "dead");
    assert.equal(status(person, '{"name": "", "age": 1}'), "dead", "minLength 1");
    assert.equal(status(person, '{"name": "Ann", "age": 1, "tags": []}'), "dead", "minItems 1");
    assert.equal(status(person, '{"name": "Ann", "age": 1, "other": 1}'), "dead", "additionalProperties false");
    const formats = recognizer(schemaToGbnf(schemas.formats));
    const f = (d: string) => `{"d": "${d}", "t": "23:59:59Z", "dt": "2024-02-29T00:00:00+01:00", "u": "123e4567-e89b-12d3-a456-426614174000"}`;
    assert.equal(status(formats, f("2024-02-29")), "accept");
    assert.equal(status(formats, f("2000-02-29")), "accept");
    assert.equal(status(formats, f("1900-02-29")), "dead", "1900 is not a leap year");
    assert.equal(status(formats, f("2023-04-31")), "dead");
  });

  test("integer ranges", () => {
    for (const [lo, hi] of [[0, 0], [-5, 5], [7, 123], [-1000, -17], [99, 1001], [-3, Infinity], [-Infinity, 42]] as const) {
      const r = recognizer(`root ::= ${intRange(lo, hi)}`);
      for (let v = -1200; v <= 1200; v++) assert.equal(status(r, String(v)) === "accept", v >= lo && v <= hi, `${v} in [${lo}, ${hi}]`);
      assert.equal(status(r, "-0"), "dead");
      assert.equal(status(r, "007"), "dead");
    }
  });

  test("unsupported keywords are refused, naming them", () => {
    for (const [schema, want] of [
      [{ type: "string", pattern: "^a" }, /schema\.pattern: the JSON Schema keyword "pattern" is not supported/],
      [{ type: "string", format: "email" }, /format "email" is not supported/],
      [{ $ref: "https://example.com/x" }, /only references to/],
      [{ not: {} }, /"not"/],
      [{ type: "object", properties: { a: { type: "array", uniqueItems: true } } }, /schema\.properties\.a\.uniqueItems/],
    ] as const) {
      assert.throws(() => schemaToGbnf(schema), (e: unknown) => e instanceof UsageError && want.test(e.message), JSON.stringify(schema));
    }
  });

  test("json_object: any JSON object", () => {
    const r = recognizer(jsonObjectGbnf());
    assert.equal(status(r, '{"a": [1, -2.5e3, "x\\u00e9", {"b": null}], "c": true}'), "accept");
    assert.equal(status(r, "[1]"), "dead");
    assert.equal(status(r, '{"a": 01}'), "dead");
  });
});

describe("token masks", () => {
  // A toy vocabulary: single bytes, a few words, and tokens that span grammar symbols or split a character.
  const pieces = [...Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)), ...['{"', '":', '"}', "true", "tru", "e}", '{"a":', ' "', "\u00e9"].map((t) => utf8.encode(t)), Uint8Array.of(0xe6, 0x97), Uint8Array.of(0xa5)];
  const STOP = pieces.length; // a control token: no bytes
  const bytes = (id: number) => (id < pieces.length ? pieces[id] : new Uint8Array(0));
  const trie = new VocabTrie(bytes, pieces.length + 1);
  const allowed = (c: GrammarConstraint) => {
    const logits = new Float32Array(pieces.length + 1);
    c.maskLogits(logits);
    return new Set([...logits.keys()].filter((i) => logits[i] === 0));
  };
  const id = (text: string) => pieces.findIndex((p) => Buffer.from(p).equals(Buffer.from(utf8.encode(text))));

  test("a token is allowed exactly when all its bytes fit; stop tokens only where the grammar may end", () => {
    const g = new TokenGrammar('root ::= "{\\"a\\":" " "? ("true" | "\\"" [^"]* "\\"") "}"', trie, bytes);
    const c = new GrammarConstraint(g, new Set([STOP]));
    for (let i = 0; i < pieces.length; i++) {
      const want = status(g.recognizer, pieces[i]) !== "dead";
      assert.equal(allowed(c).has(i), want, `token ${i}`);
    }
    assert.ok(!allowed(c).has(STOP));
    c.accept(id('{"a":'));
    assert.deepEqual([...allowed(c)].sort((a, b) => a - b), [id(" "), id('"'), id("t"), id("tru"), id("true"), id(' "'), id('":'), id('"}')].sort((a, b) => a - b));
    c.accept(id(' "'));
    c.accept(pieces.length - 2); // the first two bytes of 日
    const continuation = Array.from({ length: 64 }, (_, i) => 0x80 + i);
    assert.deepEqual([...allowed(c)], [...continuation, pieces.length - 1], "only tokens that start with a continuation byte");
    c.accept(pieces.length - 1);
    c.accept(id('"}'));
    assert.ok(c.complete);
    assert.deepEqual([...allowed(c)], [STOP]);
    assert.ok(g.reused + g.computed >= 5);
  });

  test("masks are cached per state", () => {
    const g = new TokenGrammar(jsonObjectGbnf(), trie, bytes);
    const c = new GrammarConstraint(g, new Set([STOP]));
    c.accept(id('{"'));
    allowed(c);
    c.accept(id("t"));
    allowed(c);
    c.accept(id("tru")); // still inside the same string: the same state
    allowed(c);
    assert.deepEqual([g.computed, g.reused], [1, 2]);
    c.accept(id('":'));
    allowed(c);
    assert.deepEqual([g.computed, g.reused], [2, 2]);
  });
});

describe("toy infer --json-schema / --grammar (SmolLM2)", { skip: fx.skip }, () => {
  const modelFile = () => join(fx.dir, "models", "SmolLM2-135M-Instruct.Q4_1.gguf");
  const dir = mkdtempSync(join(tmpdir(), "toy-grammar-"));
  const schema = { type: "object", additionalProperties: false, required: ["name", "age"], properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer", minimum: 0, maximum: 120 } } };
  writeFileSync(join(dir, "person.json"), JSON.stringify(schema));
  writeFileSync(join(dir, "yesno.gbnf"), 'root ::= ("yes" | "no") "."\n');

  test("the answer validates against the schema at a high temperature; follows the grammar", () => {
    const validate = new Ajv2020({ strict: false }).compile(schema);
    for (const seed of ["1", "2"]) {
      const out = toyJson<{ text: string; finish_reason: string }>(["infer", modelFile(), "--chat", "Invent a person.", "--json-schema", join(dir, "person.json"), "--temperature", "1.5", "--top-k", "0", "--min-p", "0", "--seed", seed, "--max-tokens", "60", "--json"]);
      if (out.finish_reason === "stop") assert.ok(validate(JSON.parse(out.text)), out.text);
      else assert.equal(status(recognizer(schemaToGbnf(schema)), out.text), "prefix", out.text);
    }
    const yes = toyJson<{ text: string; finish_reason: string }>(["infer", modelFile(), "--chat", "Is the sky blue?", "--grammar", join(dir, "yesno.gbnf"), "--temperature", "0", "--json"]);
    assert.match(yes.text, /^(yes|no)\.$/);
    assert.equal(yes.finish_reason, "stop");
  });

  test("a bad schema or grammar is a usage error (exit 2) naming the file and what is wrong", () => {
    writeFileSync(join(dir, "bad.json"), JSON.stringify({ type: "string", pattern: "x" }));
    writeFileSync(join(dir, "bad.gbnf"), "root ::= a\n");
    writeFileSync(join(dir, "notjson.json"), "{");
    for (const [args, want] of [
      [["--json-schema", join(dir, "bad.json")], /bad\.json\.pattern: the JSON Schema keyword "pattern" is not supported/],
      [["--grammar", join(dir, "bad.gbnf")], /rule "root" uses "a", which is not defined/],
      [["--json-schema", join(dir, "notjson.json")], /notjson\.json: not valid JSON/],
      [["--grammar", join(dir, "missing.gbnf")], /missing\.gbnf: cannot read/],
      [["--grammar", join(dir, "yesno.gbnf"), "--json-schema", join(dir, "person.json")], /not both/],
    ] as const) {
      const r = toy(["infer", modelFile(), "--chat", "x", ...args]);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, want);
    }
  });
});
