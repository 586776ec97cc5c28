// toy infer: generate text from a prompt, or answer in a chat, with the KV-cache decode engine.

import { readFileSync } from "node:fs";
import { Command } from "commander";
import { generateAsync, type GenerateResult } from "../../engines/generate.js";
import { formatGbnf, parseGbnf, structuredOutput, type OutputFormat } from "../../engines/grammar/index.js";
import { Program } from "../../engines/grammar/recognizer.js";
import { DEFAULT_SAMPLING, type SamplingOptions } from "../../engines/sampling.js";
import type { KVType } from "../../blocks/kvCacheTypes.js";
import { UsageError } from "../../errors.js";
import { chatTemplateFor, chatTemplateForChat, parseMessages, type ChatMessage } from "../../io/chat/template.js";
import { checkIds, float, idList, int, openModel, printJson, type OpenedModel } from "../common.js";
import { interactiveChat } from "../chat.js";
import { defaultModelPath } from "../../io/discovery/modelNames.js";
import { backendOptions, cacheTypeOption } from "./options.js";
import { prepareBackend } from "../../backends/index.js";
import { keepYoungGenerationSmall } from "../youngGeneration.js";

export interface InferFlags {
  prompt?: string;
  ids?: number[];
  chat?: string | true;
  system?: string;
  messages?: string;
  maxTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatPenalty: number;
  seed: number;
  ignoreEos?: boolean;
  json?: boolean;
  backend?: string;
  threads?: number;
  lora?: string;
  cacheType?: KVType;
  jsonSchema?: string;
  grammar?: string;
}

export function inferCommand(): Command {
  const cmd = new Command("infer")
    .description("generate text from a prompt, or answer a chat (streams to the terminal; greedy when --temperature is 0)")
    .argument("[model]", "a GGUF model file (default: $TOY_MODEL, else SmolLM2-135M-Instruct from the fixtures)")
    .option("--prompt <text>", "the prompt text (BOS is added when the model's vocabulary says so)")
    .option("--ids <ids>", "the prompt as comma-separated token ids, taken as given", idList)
    .option("--chat [text]", "answer one user message through the model's chat template; with no text, an interactive chat")
    .option("--system <text>", "a system message for --chat")
    .option("--messages <file>", "a JSON file with an OpenAI-style message array to answer")
    .option("--max-tokens <n>", "how many tokens to generate at most", int("--max-tokens", 0), 256)
    .option("--temperature <t>", "sampling temperature (0 = greedy)", float("--temperature", 0), DEFAULT_SAMPLING.temperature)
    .option("--top-k <k>", "keep the k most likely tokens (0 = all)", int("--top-k", 0), DEFAULT_SAMPLING.topK)
    .option("--top-p <p>", "nucleus sampling: keep the smallest set with probability >= p", float("--top-p", 0, 1), DEFAULT_SAMPLING.topP)
    .option("--min-p <p>", "drop tokens less likely than p times the most likely", float("--min-p", 0, 1), DEFAULT_SAMPLING.minP)
    .option("--repeat-penalty <r>", "penalize the last 64 tokens (1 = off)", float("--repeat-penalty", 0), DEFAULT_SAMPLING.repeatPenalty)
    .option("--seed <s>", "random seed for sampling", int("--seed", 0), DEFAULT_SAMPLING.seed)
    .option("--ignore-eos", "keep generating past end-of-sequence tokens (up to --max-tokens)")
    .option("--json", "print one JSON object instead of streaming text")
    .option("--json-schema <file>", "constrain the answer to JSON valid against this JSON Schema file")
    .option("--grammar <file>", "constrain the answer to this GBNF grammar file (llama.cpp's notation)")
    .option("--lora <adapter>", "a LoRA adapter GGUF (llama.cpp format) applied to the model at load time");
  backendOptions(cmd);
  cacheTypeOption(cmd);
  return cmd.action((modelPath: string | undefined, flags: InferFlags) => runInfer(modelPath ?? defaultModelPath(), flags));
}

export function samplingFrom(flags: InferFlags): SamplingOptions {
  return {
    temperature: flags.temperature, topK: flags.topK, topP: flags.topP, minP: flags.minP,
    repeatPenalty: flags.repeatPenalty, repeatLastN: DEFAULT_SAMPLING.repeatLastN, seed: flags.seed,
  };
}

function readText(path: string, flag: string): string {
  try { return readFileSync(path, "utf8"); } catch (e) { throw new UsageError(`${flag} ${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
}

/** --json-schema / --grammar as an output format (undefined: free text). */
export function outputFormatFrom(flags: InferFlags): OutputFormat | undefined {
  if (flags.jsonSchema !== undefined && flags.grammar !== undefined) throw new UsageError("give --json-schema or --grammar, not both");
  if (flags.grammar !== undefined) return { gbnf: readText(flags.grammar, "--grammar") };
  if (flags.jsonSchema === undefined) return undefined;
  const text = readText(flags.jsonSchema, "--json-schema");
  try { return { jsonSchema: JSON.parse(text) }; } catch (e) { throw new UsageError(`--json-schema ${flags.jsonSchema}: not valid JSON (${(e as Error).message})`); }
}

function readMessages(path: string): ChatMessage[] {
  let text: string;
  try { text = readFileSync(path, "utf8"); } catch (e) { throw new UsageError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
  let value: unknown;
  try { value = JSON.parse(text); } catch (e) { throw new UsageError(`${path}: not valid JSON (${(e as Error).message})`); }
  return parseMessages(value, path);
}

async function runInfer(modelPath: string, flags: InferFlags): Promise<void> {
  keepYoungGenerationSmall();
  const inputs = [flags.prompt, flags.ids, flags.chat, flags.messages].filter((x) => x !== undefined).length;
  if (inputs !== 1) throw new UsageError("give exactly one of --prompt TEXT, --ids 1,2,3, --chat [TEXT] or --messages FILE");
  if (flags.system !== undefined && flags.chat === undefined) throw new UsageError("--system goes with --chat");
  const format = outputFormatFrom(flags); // a bad schema or grammar is a usage error before the model loads
  if (format) new Program(parseGbnf(formatGbnf(format, flags.grammar !== undefined ? `--grammar ${flags.grammar}` : `--json-schema ${flags.jsonSchema}`)));
  await prepareBackend(flags.backend);
  const opened = openModel(modelPath, flags, flags.json);
  if (flags.chat === true) return interactiveChat(opened, flags);

  const { model, tokenizer } = opened;
  let prompt: number[];
  let stopIds: ReadonlySet<number> = tokenizer.stopIds;
  if (flags.chat !== undefined || flags.messages !== undefined) {
    const messages = flags.messages !== undefined ? readMessages(flags.messages)
      : [...(flags.system !== undefined ? [{ role: "system", content: flags.system }] : []), { role: "user", content: flags.chat as string }];
    // --chat (a person chatting) refuses a base model; --messages keeps the ChatML fallback, as toy serve does.
    const template = flags.chat !== undefined
      ? chatTemplateForChat(opened.model.file.metadata, tokenizer, modelPath)
      : chatTemplateFor(opened.model.file.metadata, tokenizer);
    prompt = template.encode(messages);
    stopIds = template.stopIds();
  } else {
    prompt = flags.ids ?? tokenizer.encode(flags.prompt!);
  }
  checkIds(prompt, model.nVocab);
  if (flags.ignoreEos) stopIds = new Set();
  const result = await streamAnswer(opened, prompt, stopIds, flags);
  if (flags.json) {
    printJson({
      prompt_tokens: prompt,
      tokens: result.tokens,
      text: tokenizer.decode(result.tokens),
      finish_reason: result.finishReason,
      timing: { prompt_tokens_per_s: result.promptTokensPerS, tokens_per_s: result.tokensPerS },
      kv_cache: { type: result.cache.type, bytes: result.cache.bytes },
    });
  } else if (process.stderr.isTTY) {
    process.stderr.write(`[${prompt.length} prompt tokens at ${result.promptTokensPerS.toFixed(1)} t/s, ${result.tokens.length} generated at ${result.tokensPerS.toFixed(1)} t/s]\n`);
  }
}

/** Generate, streaming text to stdout unless --json; Ctrl-C stops the answer, not the program. */
export async function streamAnswer(opened: OpenedModel, prompt: number[], stopIds: ReadonlySet<number>, flags: InferFlags, reuse?: { cache: GenerateResult["cache"]; cachedIds: number[] }): Promise<GenerateResult> {
  const stream = opened.tokenizer.streamDecoder();
  const format = outputFormatFrom(flags);
  const where = flags.grammar !== undefined ? `--grammar ${flags.grammar}` : `--json-schema ${flags.jsonSchema}`;
  const constraint = format ? structuredOutput(format, opened.tokenizer, stopIds, where) : undefined;
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.on("SIGINT", onSigint);
  try {
    const result = await generateAsync(opened.model, prompt, {
      maxTokens: flags.maxTokens, sampling: samplingFrom(flags), stopIds, signal: abort.signal,
      cache: reuse?.cache, cachedIds: reuse?.cachedIds, constraint,
      onToken: flags.json ? undefined : (id) => { process.stdout.write(stream.push(id)); },
    });
    if (!flags.json) process.stdout.write(stream.flush() + "\n");
    return result;
  } finally {
    process.off("SIGINT", onSigint);
  }
}
