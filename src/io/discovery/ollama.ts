// The Ollama store: $OLLAMA_MODELS, else ~/.ollama/models (and the Linux service's
// /usr/share/ollama/.ollama/models). A manifest at manifests/<registry>/<namespace>/<model>/<tag>
// lists layers; the `application/vnd.ollama.image.model` layer is the GGUF, stored as
// blobs/sha256-<hex>. Names follow Ollama's own: `ollama:llama3.2:1b` (registry.ollama.ai/library),
// `ollama:user/model:tag`, `ollama:host/namespace/model:tag`; a missing tag means `latest`.

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ModelFileError } from "../../errors.js";
import { entries, env, isDir, isFile, place, type Scan } from "./source.js";

const DEFAULT_REGISTRY = "registry.ollama.ai";
const DEFAULT_NAMESPACE = "library";
const MODEL_LAYER = "application/vnd.ollama.image.model";

export function ollamaStores(): string[] {
  const set = env("OLLAMA_MODELS");
  if (set) return [set];
  const stores = [join(homedir(), ".ollama", "models")];
  const service = "/usr/share/ollama/.ollama/models";
  if (isDir(service)) stores.push(service);
  return stores;
}

/** Ollama's short form of a model name. */
function displayName(registry: string, namespace: string, model: string, tag: string): string {
  const base = registry !== DEFAULT_REGISTRY ? `${registry}/${namespace}/${model}` : namespace !== DEFAULT_NAMESPACE ? `${namespace}/${model}` : model;
  return `${base}:${tag}`;
}

/** The blob a manifest's model layer names, or a reason there is none. */
function modelBlob(store: string, manifestPath: string): string | { why: string } {
  let manifest: { layers?: { mediaType?: string; digest?: string }[] };
  try { manifest = JSON.parse(readFileSync(manifestPath, "utf8")); } catch (e) { return { why: `not a readable manifest (${(e as Error).message})` }; }
  const layer = manifest.layers?.find((l) => l.mediaType === MODEL_LAYER);
  if (!layer) return { why: "the manifest has no model layer" };
  const m = /^sha256[:-]([0-9a-f]{64})$/.exec(layer.digest ?? "");
  if (!m) return { why: `the model layer's digest ${JSON.stringify(layer.digest)} is not sha256:<hex>` };
  const blob = join(store, "blobs", `sha256-${m[1]}`);
  return isFile(blob) ? blob : { why: `its blob ${blob} is missing` };
}

export function scanOllama(): Scan {
  const scan: Scan = { models: [], places: [], notes: [] };
  for (const store of ollamaStores()) {
    scan.places.push(place("ollama", store));
    const manifests = join(store, "manifests");
    for (const r of entries(manifests)) for (const n of entries(join(manifests, r.name))) for (const m of entries(join(manifests, r.name, n.name))) {
      for (const t of entries(join(manifests, r.name, n.name, m.name))) {
        const manifestPath = join(manifests, r.name, n.name, m.name, t.name);
        if (!isFile(manifestPath)) continue;
        const name = `ollama:${displayName(r.name, n.name, m.name, t.name)}`;
        const blob = modelBlob(store, manifestPath);
        if (typeof blob === "string") scan.models.push({ name, source: "ollama", path: blob });
        else scan.notes.push(`${name} (${manifestPath}): skipped, ${blob.why}`);
      }
    }
  }
  return scan;
}

/** `NAME[:TAG]` → the model blob's path. */
export function resolveOllama(ref: string): string {
  const slash = ref.lastIndexOf("/");
  const colon = ref.lastIndexOf(":");
  const [name, tag] = colon > slash ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, "latest"];
  const parts = name.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..") || parts.length > 3 || tag === "" || tag.includes("/")) {
    throw new ModelFileError(`ollama:${ref}: not a model name (expected NAME[:TAG], NAMESPACE/NAME[:TAG] or HOST/NAMESPACE/NAME[:TAG])`);
  }
  const [registry, namespace, model] = parts.length === 3 ? parts : parts.length === 2 ? [DEFAULT_REGISTRY, ...parts] : [DEFAULT_REGISTRY, DEFAULT_NAMESPACE, ...parts];
  const stores = ollamaStores();
  for (const store of stores) {
    const manifestPath = join(store, "manifests", registry, namespace, model, tag);
    if (!isFile(manifestPath)) continue;
    const blob = modelBlob(store, manifestPath);
    if (typeof blob === "string") return blob;
    throw new ModelFileError(`ollama:${ref}: ${manifestPath}: ${blob.why}`);
  }
  throw new ModelFileError(`ollama:${ref}: no such model in the Ollama store (${stores.join(", ")}); get it with \`ollama pull ${displayName(registry, namespace, model, tag)}\``);
}
