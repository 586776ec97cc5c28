// toy eval: per-token log-probabilities of a text under the model, and its perplexity.

import { readFileSync } from "node:fs";
import { Command } from "commander";
import { scoreTokens, scoreWindows, type Scores } from "../../engines/evaluate.js";
import { ToyError, UsageError } from "../../errors.js";
import { checkIds, idList, int, openModel, printJson } from "../common.js";
import { progressBar } from "../progress.js";
import { backendOptions } from "./options.js";

interface EvalFlags {
  prompt?: string;
  ids?: number[];
  file?: string;
  topK: number;
  maxTokens?: number;
  window?: number;
  json?: boolean;
  backend?: string;
  threads?: number;
  lora?: string;
}

export function evalCommand(): Command {
  const cmd = new Command("eval")
    .description("per-token log-probabilities and perplexity of a text under the model")
    .argument("<model>", "a GGUF model file")
    .option("--prompt <text>", "the text to score (BOS added when the vocabulary says so)")
    .option("--ids <ids>", "the tokens to score, comma-separated ids, taken as given", idList)
    .option("--file <path>", "a text file to score")
    .option("--top-k <k>", "the k most likely next tokens to show at each position", int("--top-k", 0), 5)
    .option("--max-tokens <n>", "keep only the first n tokens of the input", int("--max-tokens", 1))
    .option("--window <w>", "score in windows of w tokens, each from an empty cache (perplexity protocol)", int("--window", 2))
    .option("--json", "print one JSON object")
    .option("--lora <adapter>", "a LoRA adapter GGUF (llama.cpp format) applied to the model at load time");
  backendOptions(cmd);
  return cmd.action((modelPath: string, flags: EvalFlags) => runEval(modelPath, flags));
}

function runEval(modelPath: string, flags: EvalFlags): void {
  const given = [flags.prompt, flags.ids, flags.file].filter((x) => x !== undefined).length;
  if (given !== 1) throw new UsageError("give exactly one of --prompt TEXT, --ids 1,2,3 or --file PATH");
  const { model, tokenizer } = openModel(modelPath, flags, flags.json);
  let ids: number[];
  if (flags.ids) ids = flags.ids;
  else {
    let text = flags.prompt;
    if (flags.file !== undefined) {
      try { text = readFileSync(flags.file, "utf8"); } catch (e) { throw new ToyError(`${flags.file}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
    }
    ids = tokenizer.encode(text!);
  }
  checkIds(ids, model.nVocab);
  if (flags.maxTokens !== undefined) ids = ids.slice(0, flags.maxTokens);
  const bar = flags.json ? undefined : progressBar(flags.window ? "windows" : "tokens");
  const opts = { topK: flags.topK, onProgress: bar?.update };
  const s: Scores = flags.window ? scoreWindows(model, ids, { ...opts, window: flags.window }) : scoreTokens(model, ids, opts);
  bar?.done();
  if (flags.json) {
    printJson({ tokens: s.tokens, positions: s.positions, nll: s.nll, perplexity: s.perplexity, tokens_scored: s.tokensScored });
    return;
  }
  const w = (line: string) => process.stdout.write(line + "\n");
  if (s.positions.length <= 64) {
    w("pos  token   next    logprob  piece");
    s.positions.forEach((p, i) => {
      const piece = p.next === null ? "" : JSON.stringify(tokenizer.piece(p.next));
      w(`${String(i).padStart(3)}  ${String(s.tokens[i]).padStart(6)}  ${p.next === null ? "     -" : String(p.next).padStart(6)}  ${p.logprob === null ? "       -" : p.logprob.toFixed(4).padStart(9)}  ${piece}`);
    });
  }
  w(`tokens scored: ${s.tokensScored}   mean NLL: ${s.nll.toFixed(6)}   perplexity: ${s.perplexity.toFixed(4)}`);
}
