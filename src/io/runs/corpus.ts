// Training text: a file given with --data, or the default corpus shipped in the package
// (assets/corpus/stories.txt, short stories written by scripts/make-corpus.mjs from a small
// grammar with a fixed seed).

import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ToyError } from "../../errors.js";

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
