// The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
// Layout: models--ORG--NAME/{refs/main, snapshots/<commit>/FILE → ../../blobs/<etag>, blobs/}.
// A model is named `hf:ORG/NAME/FILE` (the revision refs/main points at, else the newest
// snapshot), `hf:ORG/NAME@REV/FILE` (a branch, tag or commit prefix), or `hf:ORG/NAME` /
// `hf:ORG/NAME:Q4_K_M` when that picks out one GGUF file.

import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ModelFileError } from "../../errors.js";
import { entries, env, findGGUF, isDir, isFile, isProjector, place, safeRelative, type FoundModel, type Scan } from "./source.js";

/** $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface. */
export function hfHome(): string {
  return env("HF_HOME") ?? join(env("XDG_CACHE_HOME") ?? join(homedir(), ".cache"), "huggingface");
}

export function hfHubCache(): string {
  return env("HF_HUB_CACHE") ?? env("HUGGINGFACE_HUB_CACHE") ?? join(hfHome(), "hub");
}

const repoFolder = (repo: string) => `models--${repo.split("/").join("--")}`;
const MAX_DEPTH = 4;

interface Snapshot { commit: string; dir: string; mtime: number }

/** Snapshots of one cached repo, the one refs/main names first, then newest first. */
function snapshots(repoDir: string): Snapshot[] {
  const main = readRef(repoDir, "main");
  const list = entries(join(repoDir, "snapshots")).filter((e) => isDir(join(repoDir, "snapshots", e.name))).map((e) => {
    const dir = join(repoDir, "snapshots", e.name);
    return { commit: e.name, dir, mtime: statSync(dir).mtimeMs };
  });
  return list.sort((a, b) => Number(b.commit === main) - Number(a.commit === main) || b.mtime - a.mtime);
}

function readRef(repoDir: string, ref: string): string | undefined {
  if (!safeRelative(ref)) return undefined;
  try { return readFileSync(join(repoDir, "refs", ref), "utf8").trim() || undefined; } catch { return undefined; }
}

export function scanHF(): Scan {
  const hub = hfHubCache();
  const scan: Scan = { models: [], places: [place("hf", hub)], notes: [] };
  for (const e of entries(hub)) {
    if (!e.name.startsWith("models--")) continue;
    const repo = e.name.slice("models--".length).split("--").join("/");
    const named = new Set<string>();
    for (const snap of snapshots(join(hub, e.name))) {
      const broken: string[] = [];
      for (const file of findGGUF(snap.dir, MAX_DEPTH, broken)) {
        // The first (preferred) snapshot holding a file gets the plain name.
        const name = named.has(file) ? `hf:${repo}@${snap.commit.slice(0, 12)}/${file}` : `hf:${repo}/${file}`;
        named.add(file);
        scan.models.push({ name, source: "hf", path: join(snap.dir, file) });
      }
      for (const b of broken) scan.notes.push(`${b}: skipped, its blob is missing (an unfinished download?)`);
    }
  }
  return scan;
}

/** `ORG/NAME[@REV][:QUANT][/FILE]` → the snapshot path of a cached file. */
export function resolveHF(ref: string): string {
  const hub = hfHubCache();
  const parts = ref.split("/");
  // `A/B/C` is repo A/B with file C, unless only repo A is cached (repos without an org).
  for (const n of [2, 1]) {
    if (parts.length < n) continue;
    const m = /^([^@:]+(?:\/[^@:]+)?)(?:@([^:]+))?(?::(.+))?$/.exec(parts.slice(0, n).join("/"));
    if (!m) continue;
    const [, repo, rev, quant] = m;
    const file = parts.slice(n).join("/");
    const repoDir = join(hub, repoFolder(repo));
    if (!isDir(repoDir)) continue;
    if (quant !== undefined && file !== "") throw new ModelFileError(`hf:${ref}: give either :QUANT or /FILE, not both`);
    return findInRepo(`hf:${ref}`, repo, repoDir, rev, file, quant);
  }
  throw new ModelFileError(`hf:${ref}: not in the Hugging Face cache (${hub}); download a file with \`toy fetch ${parts.slice(0, 2).join("/").replace(/[@:].*$/, "")}\``);
}

function findInRepo(spec: string, repo: string, repoDir: string, rev: string | undefined, file: string, quant: string | undefined): string {
  let snaps = snapshots(repoDir);
  if (rev !== undefined) {
    const commit = readRef(repoDir, rev);
    snaps = snaps.filter((s) => (commit ? s.commit === commit : s.commit.startsWith(rev)));
    if (snaps.length === 0) throw new ModelFileError(`${spec}: revision ${rev} of ${repo} is not in the cache (${repoDir})`);
    if (snaps.length > 1) throw new ModelFileError(`${spec}: revision ${rev} matches ${snaps.length} snapshots of ${repo}; give more of the commit`);
  }
  if (snaps.length === 0) throw new ModelFileError(`${spec}: ${repo} has no snapshots in the cache (${repoDir})`);
  if (file !== "") {
    if (!safeRelative(file)) throw new ModelFileError(`${spec}: bad file name ${JSON.stringify(file)}`);
    const hit = snaps.map((s) => join(s.dir, file)).find(isFile);
    if (hit) return hit;
    throw new ModelFileError(`${spec}: ${file} is not in the cached snapshots of ${repo} (${repoDir}); download it with \`toy fetch ${repo} ${file}\``);
  }
  const snap = snaps[0];
  let files = findGGUF(snap.dir, MAX_DEPTH).filter((f) => !isProjector(f));
  if (quant !== undefined) files = files.filter((f) => f.toLowerCase().includes(quant.toLowerCase()));
  if (files.length === 1) return join(snap.dir, files[0]);
  if (files.length === 0) throw new ModelFileError(`${spec}: no${quant ? ` ${quant}` : ""} GGUF file in the cached snapshot of ${repo} (${snap.dir})`);
  throw new ModelFileError(`${spec}: ${repo} holds ${files.length} GGUF files, name one: ${files.map((f) => `hf:${repo}/${f}`).join(", ")}`);
}
