// Algorithm cards: render a ModelConfig as Phuong & Hutter-style pseudocode, and parse it back.

import { configOf } from "../archs/index.js";
import type { ModelConfig } from "../archs/config.js";
import { vitConfigOf, type VitConfig } from "../archs/vitConfig.js";
import type { GGUFFile, GGUFHeader } from "../io/gguf/reader.js";
import { canonicalConfig } from "./canonical.js";

export { renderCard, type CardMeta } from "./render.js";
export { parseCard, readCard, type ParsedCard } from "./parse.js";
export { canonicalConfig } from "./canonical.js";
export { HYPERPARAMETERS } from "./hyperparameters.js";
export { renderVitCard, readVitCard, isVitCard, VIT_HYPERPARAMETERS } from "./vit.js";

/** A header as a file whose tensor bytes are not there (configs read metadata and tensor infos only). */
function headerFile(header: GGUFHeader, path: string): GGUFFile {
  const byName = new Map(header.tensors.map((t) => [t.name, t]));
  return {
    ...header, path, bytes: new Uint8Array(0),
    tensor: (name) => byName.get(name),
    tensorBytes: () => { throw new Error(`${path}: only the header was read`); },
  };
}

/** The configuration of a model from its header alone (metadata and tensor infos; no weights). */
export function configOfHeader(header: GGUFHeader, path: string): ModelConfig {
  return canonicalConfig(configOf(headerFile(header, path)));
}

/** The configuration of a ViT from its header alone. */
export function vitConfigOfHeader(header: GGUFHeader, path: string): VitConfig {
  return vitConfigOf(headerFile(header, path));
}
