// What the examples share: the quick mode CI runs them in, the folder each one writes into, the
// model the ones that need a trained model start from, and the continuation of a prompt they
// show before and after training (generate.ts shows generation itself). Not an example: the runner
// (`npm run example -- NAME`) and the test run every examples/*.ts, not what is in lib/.

import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_SAMPLING, defaultModelPath, generate, resolveModelPath, type LanguageModel, type Tokenizer } from "toy";

/** Small settings, for CI: `--quick` on the command line or TOY_EXAMPLE_QUICK=1. */
export const quick = process.argv.includes("--quick") || process.env.TOY_EXAMPLE_QUICK === "1";

/** A setting by mode: the tutorial's value, or the quick one. */
export function pick<T>(full: T, small: T): T {
  return quick ? small : full;
}

/** Where the examples write: runs/examples/ under the current folder, or $TOY_EXAMPLES_OUT. */
const outputRoot = process.env.TOY_EXAMPLES_OUT ?? join("runs", "examples");

/** The folder of one example's outputs, emptied first so that nothing stale is left in it. */
export function outputDir(example: string): string {
  const dir = join(outputRoot, example);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The model the from-scratch example saves, which the others fall back to. */
export const scratchModelPath = join(outputRoot, "from-scratch", "model.gguf");

/**
 * The model to run or fine-tune: $TOY_MODEL (a path or a name `toy list` prints), else
 * SmolLM2-135M-Instruct from the shared fixtures, else the model the from-scratch example
 * trained. With none of them there is nothing to run: say what to do and exit 2 (a usage error).
 */
export function exampleModel(): string {
  try {
    return resolveModelPath(defaultModelPath());
  } catch (e) {
    if (process.env.TOY_MODEL) throw e; // a model was named and is wrong: that error says why
    if (existsSync(scratchModelPath)) {
      console.log(`(SmolLM2-135M-Instruct is not here; using the model the from-scratch example trained, ${scratchModelPath})\n`);
      return scratchModelPath;
    }
    console.error([
      "This example needs a GGUF model, and none was found:",
      `  ${(e as Error).message}`,
      "Either point TOY_MODEL at one (TOY_MODEL=path/to/model.gguf npm run example -- NAME),",
      `or train a small one first with \`npm run example -- from-scratch\` (it saves ${scratchModelPath}).`,
    ].join("\n"));
    process.exit(2);
  }
}

/** A count for people: 134.5 M, 461 k, 96. */
export function count(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)} M` : n >= 1e4 ? `${(n / 1e3).toFixed(0)} k` : String(n);
}

/**
 * A prompt and the model's continuation of it: greedy, or sampled at `temperature` with a fixed
 * seed (the same text every run). Decoded together, so that a leading space survives.
 */
export function continuation(model: LanguageModel, tokenizer: Tokenizer, prompt: string, maxTokens: number, temperature = 0): string {
  const ids = tokenizer.encode(prompt);
  const out = generate(model, ids, { maxTokens, sampling: { ...DEFAULT_SAMPLING, temperature, seed: 0 }, stopIds: tokenizer.stopIds });
  return tokenizer.decode([...ids, ...out.tokens]);
}
