// What a request may say (JSON schemas that Fastify checks before a handler runs), and how a
// checked body becomes the settings of one generation.

import { randomInt } from "node:crypto";
import { DEFAULT_SAMPLING, type SamplingOptions } from "../engines/sampling.js";
import { invalid } from "./errors.js";

/** The same schema, also allowing null (as the OpenAI API does for every optional field). */
const nullable = <S extends { type: string }>(schema: S) => ({ ...schema, type: [schema.type, "null"] });

/** Sampling and stopping options shared by /v1/chat/completions and /v1/completions. */
const samplingProperties = {
  model: { type: "string" },
  stream: nullable({ type: "boolean" }),
  stream_options: nullable({ type: "object", properties: { include_usage: { type: "boolean" } } }),
  max_tokens: nullable({ type: "integer", minimum: 0 }),
  temperature: nullable({ type: "number", minimum: 0, maximum: 2 }),
  top_p: nullable({ type: "number", minimum: 0, maximum: 1 }),
  seed: nullable({ type: "integer" }),
  stop: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" }, maxItems: 16 }, { type: "null" }] },
  n: nullable({ type: "integer", minimum: 1, maximum: 1 }),
  presence_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
  frequency_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
  user: { type: "string" },
  // Extensions, as llama.cpp's server names them.
  top_k: nullable({ type: "integer", minimum: 0 }),
  min_p: nullable({ type: "number", minimum: 0, maximum: 1 }),
  repeat_penalty: nullable({ type: "number", exclusiveMinimum: 0 }),
  ignore_eos: nullable({ type: "boolean" }),
} as const;

export const chatSchema = {
  type: "object",
  required: ["model", "messages"],
  properties: {
    ...samplingProperties,
    messages: { type: "array", minItems: 1, items: { type: "object", required: ["role"], properties: { role: { type: "string" } } } },
    max_completion_tokens: nullable({ type: "integer", minimum: 0 }),
    logprobs: nullable({ type: "boolean" }),
    top_logprobs: nullable({ type: "integer", minimum: 0, maximum: 20 }),
  },
} as const;

export const completionSchema = {
  type: "object",
  required: ["model", "prompt"],
  properties: {
    ...samplingProperties,
    prompt: {
      anyOf: [
        { type: "string" },
        { type: "array", items: { type: "string" }, minItems: 1, maxItems: 1 },
        { type: "array", items: { type: "integer", minimum: 0 }, minItems: 1 },
        { type: "array", items: { type: "array", items: { type: "integer", minimum: 0 }, minItems: 1 }, minItems: 1, maxItems: 1 },
      ],
    },
    logprobs: nullable({ type: "integer", minimum: 0, maximum: 5 }),
    echo: { enum: [false, null] },
    suffix: { type: "null" },
    best_of: nullable({ type: "integer", minimum: 1, maximum: 1 }),
  },
} as const;

type Nullable<T> = T | null | undefined;

export interface SamplingBody {
  model: string;
  stream?: Nullable<boolean>;
  stream_options?: Nullable<{ include_usage?: boolean }>;
  max_tokens?: Nullable<number>;
  max_completion_tokens?: Nullable<number>;
  temperature?: Nullable<number>;
  top_p?: Nullable<number>;
  seed?: Nullable<number>;
  stop?: Nullable<string | string[]>;
  presence_penalty?: Nullable<number>;
  frequency_penalty?: Nullable<number>;
  top_k?: Nullable<number>;
  min_p?: Nullable<number>;
  repeat_penalty?: Nullable<number>;
  ignore_eos?: Nullable<boolean>;
}

export interface ChatBody extends SamplingBody {
  messages: unknown[];
  logprobs?: Nullable<boolean>;
  top_logprobs?: Nullable<number>;
}

export interface CompletionBody extends SamplingBody {
  prompt: string | string[] | number[] | number[][];
  logprobs?: Nullable<number>;
}

/** The settings of one generation, read from a request. */
export interface GenerationSettings {
  /** undefined: until the context is full */
  maxTokens: number | undefined;
  sampling: SamplingOptions;
  stop: string[];
  ignoreEos: boolean;
  stream: boolean;
  includeUsage: boolean;
  /** undefined: no log-probabilities; else how many alternatives per token */
  topLogprobs: number | undefined;
}

/**
 * OpenAI's defaults for what OpenAI names (temperature 1, top_p 1, a random seed); toy's
 * defaults for the extensions (top_k 40, min_p 0.05, repeat_penalty 1).
 */
export function settingsFrom(body: SamplingBody, topLogprobs: number | undefined): GenerationSettings {
  for (const p of ["presence_penalty", "frequency_penalty"] as const) {
    if ((body[p] ?? 0) !== 0) throw invalid(`${p} is not supported by this server (use repeat_penalty)`, p);
  }
  const stop = body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop;
  if (stop.some((s) => s === "")) throw invalid("stop sequences must not be empty", "stop");
  const sampling: SamplingOptions = {
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k ?? DEFAULT_SAMPLING.topK,
    minP: body.min_p ?? DEFAULT_SAMPLING.minP,
    repeatPenalty: body.repeat_penalty ?? DEFAULT_SAMPLING.repeatPenalty,
    repeatLastN: DEFAULT_SAMPLING.repeatLastN,
    seed: body.seed ?? randomInt(0, 2 ** 32),
  };
  return {
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    sampling, stop,
    ignoreEos: body.ignore_eos ?? false,
    stream: body.stream ?? false,
    includeUsage: body.stream_options?.include_usage ?? false,
    topLogprobs,
  };
}
