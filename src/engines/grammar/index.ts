// Structured output: constrain a generation to a grammar (GBNF), a JSON Schema or any JSON object.
//
//   gbnf.ts        the grammar notation: parser, printer, the expression tree
//   schema.ts      JSON Schema → GBNF
//   recognizer.ts  the grammar compiled to a byte-at-a-time pushdown recognizer
//   tokenMask.ts   the recognizer over the model's vocabulary: per-state token masks, cached
//
//   const constraint = structuredOutput({ jsonSchema: schema }, tokenizer, stopIds);
//   generate(model, prompt, { ..., stopIds, constraint });

import type { Tokenizer } from "../../io/tokenizer/index.js";
import { jsonObjectGbnf, schemaToGbnf } from "./schema.js";
import { GrammarConstraint, tokenGrammar } from "./tokenMask.js";

export { parseGbnf, printGbnf, type Grammar, type Expr } from "./gbnf.js";
export { schemaToGbnf, jsonObjectGbnf } from "./schema.js";
export { GrammarConstraint, TokenGrammar, tokenGrammar } from "./tokenMask.js";

/** What the output must be: text of a GBNF grammar, JSON valid against a schema, or any JSON object. */
export type OutputFormat = { gbnf: string } | { jsonSchema: unknown } | { jsonObject: true };

/** The grammar text of an output format (errors name `where`). */
export function formatGbnf(format: OutputFormat, where = "schema"): string {
  if ("gbnf" in format) return format.gbnf;
  if ("jsonSchema" in format) return schemaToGbnf(format.jsonSchema, where);
  return jsonObjectGbnf();
}

/** A fresh constraint for one generation (the compiled grammar and its masks are shared and cached). */
export function structuredOutput(format: OutputFormat, tokenizer: Tokenizer, stopIds: ReadonlySet<number>, where?: string): GrammarConstraint {
  return new GrammarConstraint(tokenGrammar(formatGbnf(format, where), tokenizer), stopIds);
}
