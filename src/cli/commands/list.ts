// toy list: the GGUF models in the Hugging Face cache, the Ollama store, LM Studio's folders,
// ./data and $TOY_MODELS_PATH, described from their headers.

import { Command } from "commander";
import { listModels, type Listing, type ModelEntry } from "../../io/discovery/index.js";
import { printJson } from "../common.js";

const SOURCE_LABEL: Record<string, string> = {
  hf: "Hugging Face cache", ollama: "Ollama", lmstudio: "LM Studio", local: "local folder",
};

export function listCommand(): Command {
  return new Command("list")
    .description("list the GGUF models toy can find (Hugging Face cache, Ollama, LM Studio, ./data, $TOY_MODELS_PATH); every command takes the names it prints")
    .option("--json", "print a JSON array of {name, source, architecture, parameters, type, size_bytes, path}")
    .action((flags: { json?: boolean }) => {
      const listing = listModels();
      for (const note of listing.notes) process.stderr.write(`toy list: ${note}\n`);
      if (flags.json) printJson(listing.entries);
      else if (listing.entries.length > 0) process.stdout.write(table(listing.entries));
      if (listing.entries.length === 0) process.stderr.write(nothingFound(listing));
    });
}

export function humanCount(n: number): string {
  for (const [unit, size] of [["T", 1e12], ["B", 1e9], ["M", 1e6], ["K", 1e3]] as const) {
    if (n >= size) return `${(n / size).toFixed(n >= 100 * size ? 0 : 1)}${unit}`;
  }
  return String(n);
}

export function humanBytes(n: number): string {
  for (const [unit, size] of [["GB", 1e9], ["MB", 1e6], ["kB", 1e3]] as const) {
    if (n >= size) return `${(n / size).toFixed(1)} ${unit}`;
  }
  return `${n} B`;
}

function table(entries: ModelEntry[]): string {
  const rows = [["NAME", "SOURCE", "ARCH", "PARAMS", "TYPE", "SIZE", "PATH"],
    ...entries.map((e) => [e.name, e.source, e.architecture, humanCount(e.parameters), e.type, humanBytes(e.size_bytes), e.path])];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join("  ")).join("\n") + "\n";
}

function nothingFound(listing: Listing): string {
  const places = listing.places.map((p) => `  ${p.dir}  (${SOURCE_LABEL[p.source]}${p.exists ? "" : ", absent"})`);
  return [
    "toy list: no GGUF models found. Looked in:",
    ...places,
    "To get a model:",
    "  toy fetch HuggingFaceTB/SmolLM2-135M-Instruct-GGUF      (into ./data)",
    "  ollama pull smollm2:135m                                (Ollama's store)",
    "  or put .gguf files in ./data, or in a folder named by $TOY_MODELS_PATH",
    "",
  ].join("\n");
}
