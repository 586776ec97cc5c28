// Model loading: read a GGUF, pick the architecture named by general.architecture.

import type { Device } from "../backends/kernels.js";
import { webgpuRuntime } from "../backends/index.js";
import { buildGpuModel } from "./gpuModel.js";
import { ModelFileError } from "../errors.js";
import { readGGUF, type GGUFFile } from "../io/gguf/reader.js";
import type { ModelConfig } from "./config.js";
import { gemma2 } from "./gemma2.js";
import { gemma3 } from "./gemma3.js";
import { gpt2 } from "./gpt2.js";
import { llama } from "./llama.js";
import { buildModel, forwardOf, type Architecture, type Forward, type LanguageModel, type ModelOptions } from "./model.js";
import { decoderTensors, type TensorSpec } from "./layers.js";
import { olmoe } from "./olmoe.js";
import { qwen2, qwen3 } from "./qwen.js";

export type { LanguageModel, Architecture, Forward } from "./model.js";
export type { ModelConfig } from "./config.js";

export const ARCHITECTURES: Record<string, Architecture> = { llama, qwen2, qwen3, gemma2, gemma3, olmoe, gpt2 };

const BUILT_IN = new Set(Object.keys(ARCHITECTURES));

export const supportedArchitectures = (): string[] => Object.keys(ARCHITECTURES);

/** Add an architecture (a library's own): files whose general.architecture is `arch.name` load
 *  with it. Replacing a built-in one is refused. */
export function registerArchitecture(arch: Architecture): void {
  if (BUILT_IN.has(arch.name)) throw new Error(`registerArchitecture: "${arch.name}" is built in and cannot be replaced`);
  ARCHITECTURES[arch.name] = arch;
}

export function architectureOf(file: GGUFFile): Architecture {
  const name = file.metadata.get("general.architecture");
  if (typeof name !== "string") throw new ModelFileError(`${file.path}: metadata general.architecture is missing`);
  const arch = ARCHITECTURES[name];
  if (!arch && name === "vit") {
    throw new ModelFileError(`${file.path}: a vit image classifier, not a language model (evaluate it with toy eval MODEL --data DIR; toy describe MODEL shows its card)`);
  }
  if (!arch) throw new ModelFileError(`${file.path}: architecture "${name}" is not supported (supported: ${supportedArchitectures().join(", ")})`);
  return arch;
}

/** The architecture a config names (a registered one included). */
export function architectureFor(c: ModelConfig): Architecture {
  const arch = ARCHITECTURES[c.arch];
  if (!arch) throw new ModelFileError(`architecture "${c.arch}" is not supported (supported: ${supportedArchitectures().join(", ")})`);
  return arch;
}

/** The forward of a config's architecture: what inference and training both run. */
export function forwardFor(c: ModelConfig): Forward {
  return forwardOf(architectureFor(c));
}

/** The tensors a config's architecture reads, with their ggml dims. */
export function tensorsFor(c: ModelConfig): TensorSpec[] {
  return (architectureFor(c).tensors ?? decoderTensors)(c);
}

/** The configuration a model file describes. */
export function configOf(file: GGUFFile): ModelConfig {
  return architectureOf(file).config(file);
}

/** Build the model of a file; `config` overrides the one its metadata gives (algorithm cards). */
export function loadModelFromFile(file: GGUFFile, device: Device, config?: ModelConfig, opts: ModelOptions = {}): LanguageModel {
  const arch = config ? ARCHITECTURES[config.arch] ?? architectureOf(file) : architectureOf(file);
  if (device === "webgpu") return buildGpuModel(arch, file, config ?? arch.config(file), webgpuRuntime(), opts);
  return buildModel(arch, file, config ?? arch.config(file), device, opts);
}

export function loadModel(path: string, device: Device, opts: ModelOptions = {}): LanguageModel {
  return loadModelFromFile(readGGUF(path), device, undefined, opts);
}
