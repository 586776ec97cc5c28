// Which GGUF file of a repo to fetch when none is named: a balanced quantization, as
// llama.cpp's `-hf` does (Q4_K_M first), never a vision projector or one shard of a split model.

import { basename } from "node:path";

/** Best first. */
export const PREFERRED_TYPES = [
  "Q4_K_M", "Q8_0", "Q5_K_M", "Q6_K", "Q4_K_S", "Q5_K_S", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
  "Q3_K_M", "Q3_K_L", "Q3_K_S", "Q2_K", "F16", "BF16", "F32",
];

const SHARD = /-\d{5}-of-\d{5}\.gguf$/i;

/** The storage type a file name says it holds (`smollm2-135m-instruct-q4_k_m.gguf` → Q4_K_M). */
export function typeInName(file: string): string | undefined {
  const m = /(?<![A-Z0-9])(I?Q\d(?:_K)?(?:_[A-Z0-9]{1,2})?|BF16|FP16|F16|FP32|F32)(?![A-Z0-9])/.exec(basename(file).toUpperCase().replace(/\.GGUF$/, ""));
  return m ? m[1].replace(/^FP/, "F") : undefined;
}

export interface Pick {
  file?: string;
  /** The model files there were to choose from. */
  candidates: string[];
}

export function pickGGUF(files: string[]): Pick {
  const candidates = files.filter((f) => f.toLowerCase().endsWith(".gguf") && !/mmproj/i.test(basename(f)) && !SHARD.test(f));
  if (candidates.length === 1) return { file: candidates[0], candidates };
  for (const type of PREFERRED_TYPES) {
    const hits = candidates.filter((f) => typeInName(f) === type).sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
    if (hits.length > 0) return { file: hits[0], candidates };
  }
  return { candidates };
}
