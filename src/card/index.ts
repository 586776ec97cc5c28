// Algorithm cards: render a ModelConfig as Phuong & Hutter-style pseudocode, and parse it back.

import { configOf } from "../archs/index.js";
import type { ModelConfig } from "../archs/config.js";
import type { GGUFFile, GGUFHeader } from "../io/gguf/reader.js";
import { canonicalConfig } from "./canonical.js";

export { renderCard, type CardMeta } from "./render.js";
export { parseCard, readCard, type ParsedCard } from "./parse.js";
export { canonicalConfig } from "./canonical.js";
export { HYPERPARAMETERS } from "./hyperparameters.js";

/** The configuration of a model from its header alone (metadata and tensor infos; no weights). */
export function configOfHeader(header: GGUFHeader, path: string): ModelConfig {
  const byName = new Map(header.tensors.map((t) => [t.name, t]));
  const file: GGUFFile = {
    ...header, path, bytes: new Uint8Array(0),
    tensor: (name) => byName.get(name),
    tensorBytes: () => { throw new Error(`${path}: only the header was read`); },
  };
  return canonicalConfig(configOf(file));
}
