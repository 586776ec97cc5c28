// LM Studio's model folders: ~/.lmstudio/models, ~/.cache/lm-studio/models, and the
// `downloadsFolder` of ~/.lmstudio/settings.json when it names another one. Files lie at
// <publisher>/<repo>/<file>.gguf and are named `lmstudio:PUBLISHER/REPO/FILE` (by their path in the folder).

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { ModelFileError } from "../../errors.js";
import { findGGUF, isDir, isFile, isProjector, place, safeRelative, type Scan } from "./source.js";

export function lmStudioFolders(): string[] {
  const home = homedir();
  const folders = [join(home, ".lmstudio", "models"), join(home, ".cache", "lm-studio", "models")];
  try {
    const settings = JSON.parse(readFileSync(join(home, ".lmstudio", "settings.json"), "utf8")) as { downloadsFolder?: unknown };
    if (typeof settings.downloadsFolder === "string" && settings.downloadsFolder !== "") {
      const dir = resolve(settings.downloadsFolder);
      if (!folders.includes(dir)) folders.push(dir);
    }
  } catch { /* no settings: the default folders */ }
  return folders;
}

export function scanLMStudio(): Scan {
  const scan: Scan = { models: [], places: [], notes: [] };
  const seen = new Set<string>();
  for (const dir of lmStudioFolders()) {
    scan.places.push(place("lmstudio", dir));
    const broken: string[] = [];
    for (const file of findGGUF(dir, 4, broken)) {
      const name = `lmstudio:${file}`;
      if (seen.has(name)) continue;
      seen.add(name);
      scan.models.push({ name, source: "lmstudio", path: join(dir, file) });
    }
    for (const b of broken) scan.notes.push(`${b}: skipped, a link to a missing file`);
  }
  return scan;
}

/** `PUBLISHER/REPO/FILE` (or `PUBLISHER/REPO` holding one model) → its path. */
export function resolveLMStudio(ref: string): string {
  if (!safeRelative(ref)) throw new ModelFileError(`lmstudio:${ref}: not a model name (expected PUBLISHER/REPO/FILE)`);
  const folders = lmStudioFolders();
  for (const dir of folders) {
    const path = join(dir, ref);
    if (isFile(path)) return path;
    if (ref.split("/").length === 2 && isDir(path)) {
      const files = findGGUF(path, 2).filter((f) => !isProjector(f));
      if (files.length === 1) return join(path, files[0]);
      if (files.length > 1) throw new ModelFileError(`lmstudio:${ref}: holds ${files.length} GGUF files, name one: ${files.map((f) => `lmstudio:${ref}/${f}`).join(", ")}`);
    }
  }
  throw new ModelFileError(`lmstudio:${ref}: not in the LM Studio folders (${folders.join(", ")})`);
}
