// What a request may say (JSON schemas that Fastify checks before a handler runs), and how a
// checked body becomes the settings of one generation.
//
// Every field of OpenAI's chat-completions and completions requests is either implemented or
// refused with a 400 naming it (REFUSED below); a field that is not in the API (nor one of
// llama.cpp's extensions that toy implements) is a 400 too. Nothing is silently ignored.

import { randomInt } from "node:crypto";
import type { OutputFormat } from "../engines/grammar/index.js";
import { DEFAULT_SAMPLING, type SamplingOptions } from "../engines/sampling.js";
import type { ToolSpec } from "../io/chat/template.js";
import { invalid } from "./errors.js";
import type { ToolChoice } from "./tools.js";

/** The same schema, also allowing null (as the OpenAI API does for every optional field). */
const nullable = <S extends { type: string }>(schema: S) => ({ ...schema, type: [schema.type, "null"] });

/** Choices per request (each holds a slot while it generates). */
export const MAX_N = 16;

const responseFormat = {
  anyOf: [
    { type: "null" },
    {
      type: "object", required: ["type"], additionalProperties: false,
      properties: {
        type: { enum: ["text", "json_object", "json_schema"] },
        json_schema: {
          type: "object", required: ["name"], additionalProperties: false,
          properties: { name: { type: "string" }, description: { type: "string" }, schema: { anyOf: [{ type: "object" }, { type: "boolean" }] }, strict: nullable({ type: "boolean" }) },
        },
      },
    },
  ],
};

/** Sampling and stopping options shared by /v1/chat/completions and /v1/completions. */
const samplingProperties = {
  model: { type: "string" },
  stream: nullable({ type: "boolean" }),
  stream_options: nullable({ type: "object", additionalProperties: false, properties: { include_usage: nullable({ type: "boolean" }), include_obfuscation: { enum: [false, null] } } }),
  max_tokens: nullable({ type: "integer", minimum: 0 }),
  temperature: nullable({ type: "number", minimum: 0, maximum: 2 }),
  top_p: nullable({ type: "number", minimum: 0, maximum: 1 }),
  seed: nullable({ type: "integer" }),
  stop: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" }, maxItems: 4 }, { type: "null" }] },
  n: nullable({ type: "integer", minimum: 1, maximum: MAX_N }),
  presence_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
  frequency_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
  logit_bias: nullable({ type: "object", additionalProperties: { type: "number", minimum: -100, maximum: 100 } }),
  user: nullable({ type: "string" }),
  response_format: responseFormat,
  // Extensions, as llama.cpp's server names them.
  top_k: nullable({ type: "integer", minimum: 0 }),
  min_p: nullable({ type: "number", minimum: 0, maximum: 1 }),
  repeat_penalty: nullable({ type: "number", exclusiveMinimum: 0 }),
  ignore_eos: nullable({ type: "boolean" }),
  grammar: nullable({ type: "string" }),
} as const;

/**
 * OpenAI fields toy does not implement, refused when given a value (null, or the value that means
 * "off", is accepted): the 400 names the field and says why.
 */
const REFUSED: Record<string, { off: unknown[]; why: string }> = {
  audio: { off: [null], why: "audio output is not supported (text only)" },
  modalities: { off: [null], why: "only text output is supported" },
  prediction: { off: [null], why: "predicted outputs are not supported" },
  reasoning_effort: { off: [null], why: "this server's models do not take a reasoning effort" },
  verbosity: { off: [null], why: "verbosity is not supported" },
  web_search_options: { off: [null], why: "web search is not supported" },
  functions: { off: [null], why: "the deprecated functions field is not supported; use tools" },
  function_call: { off: [null], why: "the deprecated function_call field is not supported; use tool_choice" },
  store: { off: [null, false], why: "nothing is stored by this server" },
  service_tier: { off: [null, "auto", "default"], why: "this server has one service tier (auto / default)" },
  suffix: { off: [null], why: "suffix (fill in the middle) is not supported" },
};

/** Fields OpenAI defines that only identify or label a request; they never change an answer. */
const IDENTIFIERS = { metadata: nullable({ type: "object" }), prompt_cache_key: nullable({ type: "string" }), safety_identifier: nullable({ type: "string" }) };

const anything = {};
const refusedProperties = (names: string[]) => Object.fromEntries(names.map((n) => [n, anything]));

const toolSchema = {
  type: "object", required: ["type", "function"], additionalProperties: false,
  properties: {
    type: { const: "function" },
    function: {
      type: "object", required: ["name"], additionalProperties: false,
      properties: { name: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$" }, description: { type: "string" }, parameters: { anyOf: [{ type: "object" }, { type: "boolean" }] }, strict: nullable({ type: "boolean" }) },
    },
  },
};

export const chatSchema = {
  type: "object",
  required: ["model", "messages"],
  additionalProperties: false,
  properties: {
    ...samplingProperties,
    ...IDENTIFIERS,
    ...refusedProperties(["audio", "modalities", "prediction", "reasoning_effort", "verbosity", "web_search_options", "functions", "function_call", "store", "service_tier"]),
    messages: { type: "array", minItems: 1, items: { type: "object", required: ["role"], properties: { role: { type: "string" } } } },
    max_completion_tokens: nullable({ type: "integer", minimum: 0 }),
    logprobs: nullable({ type: "boolean" }),
    top_logprobs: nullable({ type: "integer", minimum: 0, maximum: 20 }),
    tools: nullable({ type: "array", items: toolSchema }),
    tool_choice: {
      anyOf: [
        { type: "null" }, { enum: ["none", "auto", "required"] },
        { type: "object", required: ["type", "function"], additionalProperties: false, properties: { type: { const: "function" }, function: { type: "object", required: ["name"], additionalProperties: false, properties: { name: { type: "string" } } } } },
      ],
    },
    parallel_tool_calls: nullable({ type: "boolean" }),
  },
} as const;

export const completionSchema = {
  type: "object",
  required: ["model", "prompt"],
  additionalProperties: false,
  properties: {
    ...samplingProperties,
    ...refusedProperties(["suffix"]),
    prompt: {
      anyOf: [
        { type: "string" },
        { type: "array", items: { type: "string" }, minItems: 1, maxItems: 1 },
        { type: "array", items: { type: "integer", minimum: 0 }, minItems: 1 },
        { type: "array", items: { type: "array", items: { type: "integer", minimum: 0 }, minItems: 1 }, minItems: 1, maxItems: 1 },
      ],
    },
    logprobs: nullable({ type: "integer", minimum: 0, maximum: 5 }),
    echo: nullable({ type: "boolean" }),
    best_of: nullable({ type: "integer", minimum: 1, maximum: MAX_N }),
  },
} as const;

type Nullable<T> = T | null | undefined;

export interface SamplingBody {
  model: string;
  stream?: Nullable<boolean>;
  stream_options?: Nullable<{ include_usage?: Nullable<boolean> }>;
  max_tokens?: Nullable<number>;
  max_completion_tokens?: Nullable<number>;
  temperature?: Nullable<number>;
  top_p?: Nullable<number>;
  seed?: Nullable<number>;
  stop?: Nullable<string | string[]>;
  n?: Nullable<number>;
  presence_penalty?: Nullable<number>;
  frequency_penalty?: Nullable<number>;
  logit_bias?: Nullable<Record<string, number>>;
  response_format?: Nullable<{ type: "text" | "json_object" | "json_schema"; json_schema?: { name: string; schema?: unknown; strict?: Nullable<boolean> } }>;
  top_k?: Nullable<number>;
  min_p?: Nullable<number>;
  repeat_penalty?: Nullable<number>;
  ignore_eos?: Nullable<boolean>;
  grammar?: Nullable<string>;
}

export interface ChatBody extends SamplingBody {
  messages: unknown[];
  logprobs?: Nullable<boolean>;
  top_logprobs?: Nullable<number>;
  tools?: Nullable<ToolSpec[]>;
  tool_choice?: Nullable<"none" | "auto" | "required" | { type: "function"; function: { name: string } }>;
  parallel_tool_calls?: Nullable<boolean>;
}

export interface CompletionBody extends SamplingBody {
  prompt: string | string[] | number[] | number[][];
  logprobs?: Nullable<number>;
  echo?: Nullable<boolean>;
  best_of?: Nullable<number>;
}

/** The settings of one request's generations, read from a request. */
export interface GenerationSettings {
  /** undefined: until the context is full */
  maxTokens: number | undefined;
  /** Choice i samples with seed `sampling.seed + i`. */
  n: number;
  sampling: SamplingOptions;
  stop: string[];
  ignoreEos: boolean;
  stream: boolean;
  includeUsage: boolean;
  /** undefined: no log-probabilities; else how many alternatives per token */
  topLogprobs: number | undefined;
  /** Structured output (response_format json_object / json_schema, or grammar); undefined: free text. */
  format: OutputFormat | undefined;
  /** Where the format came from, for error messages. */
  formatParam: string | undefined;
}

/** 400 for any refused field that carries a value. */
export function refuseUnsupported(body: Record<string, unknown>): void {
  for (const [field, { off, why }] of Object.entries(REFUSED)) {
    if (!(field in body)) continue;
    const v = body[field];
    const isOff = off.includes(v) || (field === "modalities" && Array.isArray(v) && v.length === 1 && v[0] === "text");
    if (!isOff) throw invalid(`${field} is not supported by this server: ${why}`, field);
  }
}

/**
 * OpenAI's defaults for what OpenAI names (temperature 1, top_p 1, a random seed); toy's
 * defaults for the extensions (top_k 40, min_p 0.05, repeat_penalty 1).
 */
export function settingsFrom(body: SamplingBody, topLogprobs: number | undefined, nVocab: number): GenerationSettings {
  refuseUnsupported(body as unknown as Record<string, unknown>);
  const stop = body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop;
  if (stop.some((s) => s === "")) throw invalid("stop sequences must not be empty", "stop");
  const logitBias = new Map<number, number>();
  for (const [key, bias] of Object.entries(body.logit_bias ?? {})) {
    const id = Number(key);
    if (!/^\d+$/.test(key) || id >= nVocab) throw invalid(`logit_bias: "${key}" is not a token id of this model (0..${nVocab - 1})`, "logit_bias");
    logitBias.set(id, bias);
  }
  const sampling: SamplingOptions = {
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k ?? DEFAULT_SAMPLING.topK,
    minP: body.min_p ?? DEFAULT_SAMPLING.minP,
    repeatPenalty: body.repeat_penalty ?? DEFAULT_SAMPLING.repeatPenalty,
    repeatLastN: DEFAULT_SAMPLING.repeatLastN,
    seed: body.seed ?? randomInt(0, 2 ** 32),
    presencePenalty: body.presence_penalty ?? 0,
    frequencyPenalty: body.frequency_penalty ?? 0,
    logitBias,
  };
  let format: OutputFormat | undefined, formatParam: string | undefined;
  const rf = body.response_format;
  if (rf && rf.type === "json_object") { format = { jsonObject: true }; formatParam = "response_format"; }
  if (rf && rf.type === "json_schema") {
    if (!rf.json_schema || rf.json_schema.schema === undefined) throw invalid("response_format json_schema needs json_schema.schema", "response_format.json_schema.schema");
    format = { jsonSchema: rf.json_schema.schema };
    formatParam = "response_format.json_schema.schema";
  }
  if (rf && rf.type !== "text" && rf.json_schema !== undefined && rf.type !== "json_schema") throw invalid(`json_schema goes with type "json_schema", not "${rf.type}"`, "response_format.json_schema");
  if (body.grammar != null) {
    if (format) throw invalid("give response_format or grammar, not both", "grammar");
    format = { gbnf: body.grammar };
    formatParam = "grammar";
  }
  return {
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    n: body.n ?? 1,
    sampling, stop,
    ignoreEos: body.ignore_eos ?? false,
    stream: body.stream ?? false,
    includeUsage: body.stream_options?.include_usage ?? false,
    topLogprobs,
    format, formatParam,
  };
}

/** tools / tool_choice / parallel_tool_calls, checked; undefined when the request offers no tools. */
export function toolRequest(body: ChatBody): { tools: ToolSpec[]; choice: ToolChoice; parallel: boolean } | undefined {
  const tools = body.tools ?? [];
  const tc = body.tool_choice;
  if (tools.length === 0) {
    if (tc != null && tc !== "none" && tc !== "auto") throw invalid("tool_choice needs tools", "tool_choice");
    if (body.parallel_tool_calls != null) throw invalid("parallel_tool_calls needs tools", "parallel_tool_calls");
    return undefined;
  }
  const names = new Set<string>();
  tools.forEach((t, i) => {
    if (names.has(t.function.name)) throw invalid(`two tools are named "${t.function.name}"`, `tools[${i}].function.name`);
    names.add(t.function.name);
  });
  let choice: ToolChoice = "auto";
  if (typeof tc === "string") choice = tc;
  else if (tc) {
    if (!names.has(tc.function.name)) throw invalid(`tool_choice names "${tc.function.name}", which is not among the tools`, "tool_choice");
    choice = { name: tc.function.name };
  }
  return { tools, choice, parallel: body.parallel_tool_calls ?? true };
}
