// Turning what a user types for MODEL into a file path.

import { existsSync, statSync } from "node:fs";
import { ModelFileError } from "../errors.js";

export function resolveModelPath(spec: string): string {
  if (!existsSync(spec)) throw new ModelFileError(`${spec}: no such model file`);
  if (statSync(spec).isDirectory()) throw new ModelFileError(`${spec}: is a folder, expected a GGUF file`);
  return spec;
}
