// Model discovery: the GGUF files in the Hugging Face cache, the Ollama store, LM Studio's folders
// and local folders, each described from its header alone (fast: no tensor data is read), and the
// names `toy list` prints turned back into paths.

import { realpathSync, statSync } from "node:fs";
import { basename } from "node:path";
import { ModelFileError } from "../../errors.js";
import { readGGUFHeader, type GGUFHeader } from "../gguf/reader.js";
import { FILE_TYPE_NAMES, typeName } from "../gguf/types.js";
import { resolveHF, scanHF } from "./hf.js";
import { resolveLMStudio, scanLMStudio } from "./lmstudio.js";
import { resolveLocal, scanLocal } from "./local.js";
import { resolveOllama, scanOllama } from "./ollama.js";
import type { FoundModel, Place, Scan, SourceName } from "./source.js";

export type { FoundModel, Place, Scan, SourceName } from "./source.js";
export { hfHome, hfHubCache } from "./hf.js";

/** One row of `toy list`. */
export interface ModelEntry {
  name: string;
  source: SourceName;
  architecture: string;
  /** Sum over tensors of the product of their dimensions. */
  parameters: number;
  /** The storage type: general.file_type's name, else the type holding the most weights. */
  type: string;
  size_bytes: number;
  path: string;
}

const RESOLVERS: Record<SourceName, (ref: string) => string> = {
  hf: resolveHF, ollama: resolveOllama, lmstudio: resolveLMStudio, local: resolveLocal,
};

/** Every GGUF file the stores hold (paths and names only; no file is opened). */
export function scanAll(): Scan {
  const scans = [scanHF(), scanOllama(), scanLMStudio(), scanLocal()];
  return {
    models: scans.flatMap((s) => s.models),
    places: scans.flatMap((s) => s.places),
    notes: scans.flatMap((s) => s.notes),
  };
}

export function parameterCount(header: GGUFHeader): number {
  return header.tensors.reduce((sum, t) => sum + t.dims.reduce((p, d) => p * d, 1), 0);
}

export function storageType(header: GGUFHeader): string {
  const ft = header.metadata.get("general.file_type");
  if (typeof ft === "number" && FILE_TYPE_NAMES[ft]) return FILE_TYPE_NAMES[ft];
  const weights = new Map<number, number>();
  const matrices = header.tensors.filter((t) => t.dims.length >= 2);
  for (const t of matrices.length > 0 ? matrices : header.tensors) {
    weights.set(t.type, (weights.get(t.type) ?? 0) + t.dims.reduce((p, d) => p * d, 1));
  }
  const [top] = [...weights].sort((a, b) => b[1] - a[1]);
  return top ? typeName(top[0]) : "none";
}

/** Read a found file's header into a listing row. */
export function describe(found: FoundModel): ModelEntry {
  const header = readGGUFHeader(found.path);
  const arch = header.metadata.get("general.architecture");
  return {
    name: found.name,
    source: found.source,
    architecture: typeof arch === "string" ? arch : "unknown",
    parameters: parameterCount(header),
    type: storageType(header),
    size_bytes: statSync(found.path).size,
    path: found.path,
  };
}

export interface Listing {
  entries: ModelEntry[];
  places: Place[];
  notes: string[];
}

/** Every model toy can find, described; files that cannot be read become notes. */
export function listModels(): Listing {
  const scan = scanAll();
  const entries: ModelEntry[] = [];
  const notes = [...scan.notes];
  for (const found of scan.models) {
    try {
      entries.push(describe(found));
    } catch (e) {
      notes.push(`${found.name}: skipped, ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { entries, places: scan.places, notes };
}

const PREFIX = /^(hf|ollama|lmstudio|local):(.*)$/s;

/**
 * A model name → its path. `hf:`, `ollama:`, `lmstudio:` and `local:` names are looked up in their
 * store (a ModelFileError says where, when absent). A bare name is matched against what `toy list`
 * finds: its name without the `source:` prefix (`llama3.2:1b`, `ORG/REPO/FILE`), an Ollama name
 * without its tag, or the file name with or without `.gguf`. Undefined when nothing matches.
 */
export function resolveModelName(spec: string): string | undefined {
  const m = PREFIX.exec(spec);
  if (m) return RESOLVERS[m[1] as SourceName](m[2]);
  const models = scanAll().models;
  const unprefixed = (f: FoundModel) => f.name.slice(f.name.indexOf(":") + 1);
  const fileName = (f: FoundModel) => basename(unprefixed(f));
  const rules: ((f: FoundModel) => boolean)[] = [
    (f) => unprefixed(f) === spec,
    (f) => f.source === "ollama" && unprefixed(f) === `${spec}:latest`,
    (f) => f.source !== "ollama" && (fileName(f) === spec || fileName(f).replace(/\.gguf$/i, "") === spec),
  ];
  for (const rule of rules) {
    const hits = models.filter(rule);
    if (new Set(hits.map((h) => realPath(h.path))).size === 1) return hits[0].path; // one file, maybe by several names
    if (hits.length > 1) throw new ModelFileError(`${spec}: matches ${hits.length} models, name one: ${hits.map((h) => h.name).join(", ")}`);
  }
  return undefined;
}

function realPath(path: string): string {
  try { return realpathSync(path); } catch { return path; }
}
