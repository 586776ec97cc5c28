// Training data of --data FILE: a text tokenized with the model's tokenizer, or a pre-tokenized
// file of uint16/uint32 ids (tokenFile.ts); the default is the corpus shipped in the package
// (assets/corpus/stories.txt, short stories written by scripts/make-corpus.mjs from a small
// grammar with a fixed seed). Which of the two a file is: --data-format when given, else the
// extension (.bin and .u16: uint16, as nanoGPT writes train.bin; .u32: uint32; anything else: text).

import { existsSync, readFileSync } from "node:fs";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { ToyError, UsageError } from "../../errors.js";
import { readTokenFile, type FileMapper, type TokenWidth } from "./tokenFile.js";
import type { TokenStream } from "./windows.js";

export type DataFormat = "text" | TokenWidth;
export const DATA_FORMATS: readonly DataFormat[] = ["text", "u16", "u32"];

/** assets/corpus/stories.txt at the package root (dist/src/io/runs → ../../../../assets). */
export function defaultCorpusPath(): string {
  const candidates = ["../../../../assets/corpus/stories.txt", "../../../assets/corpus/stories.txt"]
    .map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new ToyError(`the default corpus is missing (looked for ${candidates.join(", ")}); pass --data FILE`);
  return found;
}

export function readCorpus(path: string): string {
  try { return readFileSync(path, "utf8"); } catch (e) { throw new ToyError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
}

/**
 * The format of a data file: `given` (--data-format) when set, else from its extension. A `.bin`
 * is taken as uint16 only while the vocabulary fits in 16 bits; past that (Llama 3's 128,256 ids)
 * the file could be either, and guessing wrong trains on garbage, so the flag is required.
 */
export function dataFormatOf(path: string, given: DataFormat | undefined, nVocab: number): DataFormat {
  if (given) return given;
  const ext = extname(path).toLowerCase();
  if (ext === ".u16") return "u16";
  if (ext === ".u32") return "u32";
  if (ext === ".bin") {
    if (nVocab > 65536) throw new UsageError(`--data ${path}: the model's vocabulary (${nVocab} ids) does not fit in uint16, so a .bin could hold uint16 or uint32 ids; say which with --data-format u16|u32`);
    return "u16";
  }
  return "text";
}

/** The token ids of a data file in its format; `encode` tokenizes a text. */
export function corpusTokens(path: string, format: DataFormat, nVocab: number, encode: (text: string) => number[], map?: FileMapper): TokenStream {
  if (format === "text") return Int32Array.from(encode(readCorpus(path)));
  return readTokenFile(path, format, nVocab, map);
}
