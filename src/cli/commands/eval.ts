// toy eval: per-token log-probabilities of a text under the model, and its perplexity; for an
// image classifier (a ViT), accuracy and the confusion matrix on the evaluation split of --data.

import { readFileSync } from "node:fs";
import { Command } from "commander";
import { scoreTokensAsync, scoreWindowsAsync, type Scores } from "../../engines/evaluate.js";
import { BackendError, DataFileError, ToyError, UsageError } from "../../errors.js";
import { loadVisionModel } from "../../archs/vit.js";
import { prepareBackend, selectBackend } from "../../backends/index.js";
import { classify, formatConfusion } from "../../engines/classify.js";
import { readGGUF, readGGUFHeader } from "../../io/gguf/reader.js";
import { loadImageData } from "../../io/images/index.js";
import { resolveModelPath } from "../../io/discovery/modelNames.js";
import { encodeFirst } from "../../io/tokenizer/encodeFirst.js";
import { checkIds, idList, int, openModel, printJson } from "../common.js";
import { progressBar } from "../progress.js";
import { backendOptions, cacheTypeOption } from "./options.js";

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
  data?: string;
  trainCount?: number;
  evalCount?: number;
  batch: number;
}

export function evalCommand(): Command {
  const cmd = new Command("eval")
    .description("per-token log-probabilities and perplexity of a text under the model; for an image classifier (vit), accuracy and the confusion matrix on --data")
    .argument("<model>", "a GGUF model file")
    .option("--prompt <text>", "the text to score (BOS added when the vocabulary says so)")
    .option("--ids <ids>", "the tokens to score, comma-separated ids, taken as given", idList)
    .option("--file <path>", "a text file to score")
    .option("--top-k <k>", "the k most likely next tokens to show at each position", int("--top-k", 0), 5)
    .option("--max-tokens <n>", "keep only the first n tokens of the input", int("--max-tokens", 1))
    .option("--window <w>", "score in windows of w tokens, each from an empty cache (perplexity protocol)", int("--window", 2))
    .option("--json", "print one JSON object")
    .option("--lora <adapter>", "a LoRA adapter GGUF (llama.cpp format) applied to the model at load time")
    .option("--data <dir>", "vit: the images (MNIST's IDX files or class folders); their evaluation split is scored, as in toy train vit")
    .option("--train-count <n>", "vit, MNIST: images of the training split (sets where the evaluation split starts; as in toy train vit)", int("--train-count", 1))
    .option("--eval-count <n>", "vit, MNIST: images of the evaluation split", int("--eval-count", 1))
    .option("--batch <n>", "vit: images per forward pass", int("--batch", 1), 250);
  backendOptions(cmd);
  cacheTypeOption(cmd);
  return cmd.action((modelPath: string, flags: EvalFlags) => runEval(modelPath, flags));
}

async function runEval(modelPath: string, flags: EvalFlags): Promise<void> {
  const path = resolveModelPath(modelPath);
  if (readGGUFHeader(path).metadata.get("general.architecture") === "vit") return evalImages(path, flags);
  if (flags.data !== undefined) throw new UsageError(`--data DIR evaluates an image classifier; ${modelPath} is a language model (give --prompt, --ids or --file)`);
  const given = [flags.prompt, flags.ids, flags.file].filter((x) => x !== undefined).length;
  if (given !== 1) throw new UsageError("give exactly one of --prompt TEXT, --ids 1,2,3 or --file PATH");
  await prepareBackend(flags.backend);
  const { model, tokenizer } = openModel(modelPath, flags, flags.json);
  let ids: number[];
  if (flags.ids) ids = flags.ids;
  else {
    let text = flags.prompt;
    if (flags.file !== undefined) {
      try { text = readFileSync(flags.file, "utf8"); } catch (e) { throw new ToyError(`${flags.file}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
    }
    ids = flags.maxTokens === undefined ? tokenizer.encode(text!) : encodeFirst(tokenizer, text!, flags.maxTokens);
  }
  checkIds(ids, model.nVocab);
  if (flags.maxTokens !== undefined) ids = ids.slice(0, flags.maxTokens);
  const bar = flags.json ? undefined : progressBar(flags.window ? "windows" : "tokens");
  const opts = { topK: flags.topK, onProgress: bar?.update };
  const s: Scores = flags.window ? await scoreWindowsAsync(model, ids, { ...opts, window: flags.window }) : await scoreTokensAsync(model, ids, opts);
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

/** Accuracy and the confusion matrix of a ViT on the evaluation split of --data. */
function evalImages(path: string, flags: EvalFlags): void {
  if (flags.data === undefined) throw new UsageError(`${path} is an image classifier (vit): give --data DIR, the images to evaluate`);
  if (flags.prompt !== undefined || flags.ids !== undefined || flags.file !== undefined || flags.lora !== undefined) {
    throw new UsageError("--prompt, --ids, --file and --lora are for language models; an image classifier takes --data DIR");
  }
  if (flags.backend === "webgpu") throw new BackendError("image classifiers (vit) do not run on webgpu yet (use --backend cpu)");
  const device = selectBackend(flags.backend, { threads: flags.threads, quiet: flags.json });
  const model = loadVisionModel(readGGUF(path), device);
  const c = model.config;
  // The checkpoint's own standardization, so the pixels are what the model was trained on.
  const data = loadImageData(flags.data, { trainCount: flags.trainCount, evalCount: flags.evalCount, normalize: model.normalization ?? false });
  const set = data.eval;
  if (set.channels !== c.channels || set.height !== c.height || set.width !== c.width) {
    throw new DataFileError(`${flags.data}: images are ${set.channels}×${set.height}×${set.width}, ${path} takes ${c.channels}×${c.height}×${c.width}`);
  }
  if (set.classes.length > c.nClasses) throw new DataFileError(`${flags.data}: ${set.classes.length} classes, ${path} knows ${c.nClasses}`);
  if (set.count === 0) throw new UsageError(`${flags.data}: the evaluation split is empty`);
  const bar = flags.json ? undefined : progressBar("images");
  const r = classify(model, set, flags.batch, bar?.update);
  bar?.done();
  if (flags.json) {
    printJson({ images: r.count, correct: r.correct, accuracy: r.accuracy, loss: r.loss, classes: r.classes, confusion: r.confusion, data: data.description });
    return;
  }
  const w = (line: string) => process.stdout.write(line + "\n");
  w(data.description);
  w(`accuracy: ${(100 * r.accuracy).toFixed(2)}% (${r.correct}/${r.count})   mean loss: ${r.loss.toFixed(4)}`);
  w("confusion matrix (rows: true class, columns: predicted):");
  process.stdout.write(formatConfusion(r));
}
