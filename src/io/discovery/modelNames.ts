// Turning what a user types for MODEL into a file path: a path, a name `toy list` prints
// (`hf:ORG/REPO/FILE`, `ollama:NAME:TAG`, `lmstudio:PUBLISHER/REPO/FILE`, `local:FILE`), or such a
// name without its prefix when it picks out one model.

import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ModelFileError, UsageError } from "../../errors.js";
import { resolveModelName } from "./index.js";
import { isRunDir, runModelPath } from "../runs/bundle.js";

export function resolveModelPath(spec: string): string {
  if (existsSync(spec)) {
    if (statSync(spec).isDirectory()) {
      // A run bundle (runs/<id>) stands for its latest checkpoint.
      const checkpoint = isRunDir(spec) ? runModelPath(spec) : undefined;
      if (checkpoint) return checkpoint;
      throw new ModelFileError(`${spec}: is a folder, expected a GGUF file${isRunDir(spec) ? " (a run folder with no checkpoint yet)" : ""}`);
    }
    return spec;
  }
  const named = resolveModelName(spec);
  if (named !== undefined) return named;
  throw new ModelFileError(`${spec}: no such model file, and no model of that name (\`toy list\` shows the models toy can find)`);
}

const DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf";

/** The model used when none is named: $TOY_MODEL, else SmolLM2-135M-Instruct from the fixtures. */
export function defaultModelPath(): string {
  if (process.env.TOY_MODEL) return process.env.TOY_MODEL;
  const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
  const candidates = [
    process.env.TOY_FIXTURES && join(process.env.TOY_FIXTURES, "models", DEFAULT_MODEL_FILE),
    join(projectRoot, "..", "shared", "fixtures", "models", DEFAULT_MODEL_FILE),
    join(projectRoot, "data", DEFAULT_MODEL_FILE),
  ].filter((p): p is string => typeof p === "string");
  const found = candidates.find((p) => existsSync(p));
  if (found) return found;
  throw new UsageError(`no model given and no default model found (looked for ${candidates.join(", ")}); pass a GGUF path or set TOY_MODEL`);
}
