// Model loading: read a GGUF, pick the architecture named by general.architecture.

import type { Device } from "../backends/kernels.js";
import { ModelFileError } from "../errors.js";
import { readGGUF, type GGUFFile } from "../io/gguf/reader.js";
import { loadLlama } from "./llama.js";
import type { LanguageModel } from "./model.js";

export type { LanguageModel } from "./model.js";

const ARCHITECTURES: Record<string, (file: GGUFFile, device: Device) => LanguageModel> = {
  llama: loadLlama,
};

export const supportedArchitectures = (): string[] => Object.keys(ARCHITECTURES);

export function loadModelFromFile(file: GGUFFile, device: Device): LanguageModel {
  const arch = file.metadata.get("general.architecture");
  if (typeof arch !== "string") throw new ModelFileError(`${file.path}: metadata general.architecture is missing`);
  const load = ARCHITECTURES[arch];
  if (!load) throw new ModelFileError(`${file.path}: architecture "${arch}" is not supported (supported: ${supportedArchitectures().join(", ")})`);
  return load(file, device);
}

export function loadModel(path: string, device: Device): LanguageModel {
  return loadModelFromFile(readGGUF(path), device);
}
