// Plain folders of GGUF files: ./data (where `toy fetch` puts downloads) and the folders (or
// files) of $TOY_MODELS_PATH, separated like $PATH. Named `local:FILE`, FILE relative to its folder.

import { basename, delimiter, dirname, join, resolve } from "node:path";
import { ModelFileError } from "../../errors.js";
import { env, findGGUF, isFile, isGGUFName, place, safeRelative, type Scan } from "./source.js";

export function localFolders(): string[] {
  const list = [resolve("data"), ...(env("TOY_MODELS_PATH") ?? "").split(delimiter).filter((p) => p !== "").map((p) => resolve(p))];
  return [...new Set(list)];
}

export function scanLocal(): Scan {
  const scan: Scan = { models: [], places: [], notes: [] };
  const seen = new Set<string>();
  for (const root of localFolders()) {
    // A file in $TOY_MODELS_PATH stands for itself.
    const [dir, files] = isFile(root) ? [dirname(root), isGGUFName(root) ? [basename(root)] : []] : [root, findGGUF(root, 3, [])];
    scan.places.push(isFile(root) ? { source: "local", dir: root, exists: true } : place("local", root));
    for (const file of files) {
      const name = `local:${file}`;
      if (seen.has(name)) { scan.notes.push(`${join(dir, file)}: listed under ${name} already (from an earlier folder)`); continue; }
      seen.add(name);
      scan.models.push({ name, source: "local", path: join(dir, file) });
    }
  }
  return scan;
}

export function resolveLocal(ref: string): string {
  if (!safeRelative(ref)) throw new ModelFileError(`local:${ref}: not a model name (expected a file inside ./data or $TOY_MODELS_PATH)`);
  const roots = localFolders();
  for (const root of roots) {
    if (isFile(root)) { if (basename(root) === ref) return root; continue; }
    if (isFile(join(root, ref))) return join(root, ref);
  }
  throw new ModelFileError(`local:${ref}: not found in ${roots.join(", ")}`);
}
