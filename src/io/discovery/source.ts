// What every model source shares: the shape of a found model file, the places looked in, and
// small file-system helpers that never throw (a listing skips what it cannot read).

import { readdirSync, statSync, type Dirent } from "node:fs";
import { join } from "node:path";

export type SourceName = "hf" | "ollama" | "lmstudio" | "local";

/** A GGUF file found in one of the stores, before its header is read. */
export interface FoundModel {
  /** What the user types for MODEL: `hf:ORG/REPO/FILE`, `ollama:NAME:TAG`, `lmstudio:PUB/REPO/FILE`, `local:FILE`. */
  name: string;
  source: SourceName;
  /** The path to open (for the Hugging Face cache: the snapshot path, a symlink into blobs/). */
  path: string;
}

/** A folder a source looked in. */
export interface Place {
  source: SourceName;
  dir: string;
  exists: boolean;
}

export interface Scan {
  models: FoundModel[];
  places: Place[];
  /** Files that were skipped, and why. */
  notes: string[];
}

/** An environment variable, with the empty string taken as unset. */
export function env(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v === "" ? undefined : v;
}

export function isDir(path: string): boolean {
  try { return statSync(path).isDirectory(); } catch { return false; }
}

/** A regular file (following symlinks). */
export function isFile(path: string): boolean {
  try { return statSync(path).isFile(); } catch { return false; }
}

export function entries(dir: string): Dirent[] {
  try { return readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)); } catch { return []; }
}

export function place(source: SourceName, dir: string): Place {
  return { source, dir, exists: isDir(dir) };
}

export const isGGUFName = (name: string): boolean => name.toLowerCase().endsWith(".gguf");

/**
 * The `.gguf` files under `dir`, as paths relative to it with `/` separators, following symlinks
 * (bounded depth, so a symlink loop ends). A link whose target is missing goes to `broken`.
 */
export function findGGUF(dir: string, maxDepth: number, broken: string[] = []): string[] {
  const out: string[] = [];
  const walk = (rel: string, depth: number) => {
    for (const e of entries(rel === "" ? dir : join(dir, rel))) {
      const r = rel === "" ? e.name : `${rel}/${e.name}`;
      const full = join(dir, r);
      let st;
      try { st = statSync(full); } catch { if (isGGUFName(e.name)) broken.push(full); continue; }
      if (st.isDirectory()) { if (depth < maxDepth && !e.name.startsWith(".")) walk(r, depth + 1); }
      else if (st.isFile() && isGGUFName(e.name)) out.push(r);
    }
  };
  walk("", 0);
  return out;
}

/** A relative path inside a store that cannot climb out of it. */
export function safeRelative(rel: string): boolean {
  return rel !== "" && !rel.startsWith("/") && !rel.split(/[\\/]/).some((s) => s === ".." || s === "");
}

/** Files that are not models on their own: vision projectors. */
export const isProjector = (file: string): boolean => /(^|[/\\._-])mmproj/i.test(file);
