// toy infer: generate text from a prompt with the KV-cache decode engine.

import { Command, Option } from "commander";
import { generate } from "../../engines/generate.js";
import { DEFAULT_SAMPLING, type SamplingOptions } from "../../engines/sampling.js";
import { UsageError } from "../../errors.js";
import { checkIds, float, idList, int, openModel, printJson } from "../common.js";
import { backendOptions } from "./options.js";

interface InferFlags {
  prompt?: string;
  ids?: number[];
  maxTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatPenalty: number;
  seed: number;
  json?: boolean;
  backend?: string;
  threads?: number;
}

export function inferCommand(): Command {
  const cmd = new Command("infer")
    .description("generate text from a prompt (streams to the terminal; greedy when --temperature is 0)")
    .argument("<model>", "a GGUF model file")
    .option("--prompt <text>", "the prompt text (BOS is added when the model's vocabulary says so)")
    .option("--ids <ids>", "the prompt as comma-separated token ids, taken as given", idList)
    .option("--max-tokens <n>", "how many tokens to generate at most", int("--max-tokens", 0), 128)
    .option("--temperature <t>", "sampling temperature (0 = greedy)", float("--temperature", 0), DEFAULT_SAMPLING.temperature)
    .option("--top-k <k>", "keep the k most likely tokens (0 = all)", int("--top-k", 0), DEFAULT_SAMPLING.topK)
    .option("--top-p <p>", "nucleus sampling: keep the smallest set with probability >= p", float("--top-p", 0, 1), DEFAULT_SAMPLING.topP)
    .option("--min-p <p>", "drop tokens less likely than p times the most likely", float("--min-p", 0, 1), DEFAULT_SAMPLING.minP)
    .option("--repeat-penalty <r>", "penalize the last 64 tokens (1 = off)", float("--repeat-penalty", 0), DEFAULT_SAMPLING.repeatPenalty)
    .option("--seed <s>", "random seed for sampling", int("--seed", 0), DEFAULT_SAMPLING.seed)
    .option("--json", "print one JSON object instead of streaming text");
  backendOptions(cmd);
  return cmd.action((modelPath: string, flags: InferFlags) => runInfer(modelPath, flags));
}

function runInfer(modelPath: string, flags: InferFlags): void {
  if ((flags.prompt === undefined) === (flags.ids === undefined)) throw new UsageError("give exactly one of --prompt TEXT or --ids 1,2,3");
  const { model, tokenizer } = openModel(modelPath, flags, flags.json);
  const prompt = flags.ids ?? tokenizer.encode(flags.prompt!);
  checkIds(prompt, model.nVocab);
  const sampling: SamplingOptions = {
    temperature: flags.temperature, topK: flags.topK, topP: flags.topP, minP: flags.minP,
    repeatPenalty: flags.repeatPenalty, repeatLastN: DEFAULT_SAMPLING.repeatLastN, seed: flags.seed,
  };
  const stream = tokenizer.streamDecoder();
  const result = generate(model, prompt, {
    maxTokens: flags.maxTokens, sampling, stopIds: tokenizer.stopIds,
    onToken: flags.json ? undefined : (id) => { process.stdout.write(stream.push(id)); },
  });
  if (flags.json) {
    printJson({
      prompt_tokens: prompt,
      tokens: result.tokens,
      text: tokenizer.decode(result.tokens),
      finish_reason: result.finishReason,
      timing: { prompt_tokens_per_s: result.promptTokensPerS, tokens_per_s: result.tokensPerS },
    });
    return;
  }
  process.stdout.write(stream.flush() + "\n");
  if (process.stderr.isTTY) {
    process.stderr.write(`[${prompt.length} prompt tokens at ${result.promptTokensPerS.toFixed(1)} t/s, ${result.tokens.length} generated at ${result.tokensPerS.toFixed(1)} t/s]\n`);
  }
}
