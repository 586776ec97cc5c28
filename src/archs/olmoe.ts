// OLMoE: Llama's block with a mixture of experts in place of the dense FFN (router softmax,
// top-k experts, weights not renormalized) and RMSNorm of q and k over the whole projection.

import { ModelFileError } from "../errors.js";
import { Metadata } from "../io/gguf/metadata.js";
import { llamaLikeConfig } from "./llama.js";
import type { Architecture } from "./model.js";

export const olmoe: Architecture = {
  name: "olmoe",
  config(file) {
    const c = llamaLikeConfig(file, "olmoe", "neox");
    const m = new Metadata(file.metadata, file.path);
    const experts = m.count("olmoe.expert_count");
    const expertsUsed = m.count("olmoe.expert_used_count");
    if (experts === 0 || expertsUsed === 0 || expertsUsed > experts) {
      throw new ModelFileError(`${file.path}: olmoe.expert_used_count ${expertsUsed} must be from 1 to olmoe.expert_count ${experts}`);
    }
    return { ...c, attention: { ...c.attention, qkNorm: "full" }, ffn: { ...c.ffn, experts, expertsUsed } };
  },
};
