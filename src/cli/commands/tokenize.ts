// toy tokenize: the token ids (and pieces) of a text; works on vocabulary-only GGUF files.

import { readFileSync } from "node:fs";
import { Command } from "commander";
import { ToyError, UsageError } from "../../errors.js";
import { readGGUFHeader } from "../../io/gguf/reader.js";
import { tokenizerFromMetadata } from "../../io/tokenizer/index.js";
import { printJson } from "../common.js";
import { resolveModelPath } from "../../io/discovery/modelNames.js";

interface TokenizeFlags {
  text?: string;
  file?: string;
  bos?: boolean;
  parseSpecial?: boolean;
  json?: boolean;
}

export function tokenizeCommand(): Command {
  return new Command("tokenize")
    .description("print the token ids of a text (no BOS and special-token text as plain text, unless asked)")
    .argument("<model>", "a GGUF model or vocabulary file")
    .option("--text <text>", "the text to tokenize")
    .option("--file <path>", "a text file to tokenize")
    .option("--bos", "add the BOS token")
    .option("--parse-special", "turn special-token text such as <|im_end|> into its token")
    .option("--json", 'print {"tokens": [...], "pieces": [...]}')
    .action((modelPath: string, flags: TokenizeFlags) => {
      if ((flags.text === undefined) === (flags.file === undefined)) throw new UsageError("give exactly one of --text TEXT or --file PATH");
      const path = resolveModelPath(modelPath);
      const tokenizer = tokenizerFromMetadata(readGGUFHeader(path).metadata, path);
      let text = flags.text;
      if (flags.file !== undefined) {
        try { text = readFileSync(flags.file, "utf8"); } catch (e) { throw new ToyError(`${flags.file}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
      }
      const tokens = tokenizer.encode(text!, { addBos: flags.bos ?? false, parseSpecial: flags.parseSpecial ?? false });
      const pieces = tokens.map((id) => tokenizer.piece(id));
      if (flags.json) printJson({ tokens, pieces });
      else process.stdout.write(tokens.map((id, i) => `${id}\t${JSON.stringify(pieces[i])}`).join("\n") + "\n");
    });
}
