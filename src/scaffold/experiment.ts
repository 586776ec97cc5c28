// `toy new NAME`: an experiment project. One script whose hyperparameters all come from
// environment variables (so a sweep is a shell loop), printing one JSON result; a README; a test
// on a tiny model it writes itself.

export const EXPERIMENT = `// {{name}}: score a text under a model (per-token negative log-likelihood, perplexity) and
// sample a continuation, through toy's library API. Every hyperparameter is an environment
// variable; the result is one JSON line on stdout:
//
//   TOY_MODEL=model.gguf WINDOW=256 SEED=1 node experiment.mjs >> results.jsonl

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  defaultModelPath, generate, loadModelFromFile, readGGUF, resolveModelPath, scoreWindows,
  selectBackend, tokenizerFromMetadata, DEFAULT_SAMPLING, UsageError,
} from "toy";

/** name: [default, parse, what it sets]. */
export const HYPERPARAMETERS = {
  TOY_MODEL: [null, String, "a GGUF file or a name from 'toy list' (default: toy's default model)"],
  TEXT_FILE: [fileURLToPath(new URL("data/sample.txt", import.meta.url)), String, "the text to score"],
  MAX_TOKENS: [1024, integer, "score the first MAX_TOKENS tokens of the text"],
  WINDOW: [128, integer, "tokens per window; each window is scored from an empty cache"],
  PROMPT: ["Once upon a time", String, "the prompt of the sample"],
  GENERATE: [32, integer, "tokens to sample after PROMPT (0: no sample)"],
  TEMPERATURE: [DEFAULT_SAMPLING.temperature, number, "sampling temperature (0: greedy)"],
  TOP_K: [DEFAULT_SAMPLING.topK, integer, "keep the k most likely tokens (0: all)"],
  SEED: [0, integer, "random seed of the sampler"],
  BACKEND: [null, String, "ts or cpu (default: cpu when built, else ts)"],
  THREADS: [null, integer, "threads of the cpu backend"],
};

function integer(s) {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) throw new Error("expected a whole number >= 0, got " + JSON.stringify(s));
  return n;
}

function number(s) {
  const n = Number(s);
  if (s.trim() === "" || !Number.isFinite(n)) throw new Error("expected a number, got " + JSON.stringify(s));
  return n;
}

/** The run's hyperparameters: each environment variable that is set, else its default. */
export function configFrom(env = process.env) {
  const config = {};
  for (const [name, [fallback, parse]] of Object.entries(HYPERPARAMETERS)) {
    const value = env[name];
    try {
      config[name] = value === undefined || value === "" ? fallback : parse(value);
    } catch (e) {
      throw new UsageError(name + ": " + e.message);
    }
  }
  return config;
}

/** Run the experiment; returns what it measured. */
export function run(config) {
  const started = performance.now();
  const device = selectBackend(config.BACKEND ?? undefined, { threads: config.THREADS ?? undefined, quiet: true });
  const path = resolveModelPath(config.TOY_MODEL ?? defaultModelPath());
  const file = readGGUF(path);
  const model = loadModelFromFile(file, device);
  const tokenizer = tokenizerFromMetadata(file.metadata, path);

  const ids = tokenizer.encode(readFileSync(config.TEXT_FILE, "utf8"));
  const scores = scoreWindows(model, ids, { topK: 0, window: config.WINDOW, maxTokens: config.MAX_TOKENS });

  let sample = null;
  if (config.GENERATE > 0) {
    const sampling = { ...DEFAULT_SAMPLING, temperature: config.TEMPERATURE, topK: config.TOP_K, seed: config.SEED };
    const out = generate(model, tokenizer.encode(config.PROMPT), { maxTokens: config.GENERATE, sampling, stopIds: tokenizer.stopIds });
    sample = { text: tokenizer.decode(out.tokens), tokens: out.tokens, tokens_per_s: out.tokensPerS };
  }
  return {
    model: path,
    architecture: model.arch,
    backend: device,
    tokens_scored: scores.tokensScored,
    nll: scores.nll,
    perplexity: scores.perplexity,
    sample,
    seconds: (performance.now() - started) / 1000,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const config = configFrom();
    const results = run(config);
    process.stdout.write(JSON.stringify({ experiment: "{{name}}", config, results }) + "\\n");
  } catch (e) {
    process.stderr.write("{{name}}: " + (e instanceof Error ? e.message : String(e)) + "\\n");
    process.exit(typeof e?.exitCode === "number" ? e.exitCode : 1);
  }
}
`;

export const EXPERIMENT_TEST = `// The experiment on a tiny random model (no download): hyperparameters reach the run, the same
// seed gives the same result, a bad value is refused.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { configFrom, run } from "../experiment.mjs";
import { tinyModel } from "./tiny-model.mjs";

const dir = mkdtempSync(join(tmpdir(), "{{name}}-"));
const model = join(dir, "tiny.gguf");
writeFileSync(model, tinyModel({ ctx: 128 }));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const script = fileURLToPath(new URL("../experiment.mjs", import.meta.url));
const env = { TOY_MODEL: model, MAX_TOKENS: "96", WINDOW: "32", GENERATE: "8", TEMPERATURE: "1", SEED: "3" };

function experiment(vars) {
  const r = spawnSync(process.execPath, [script], { encoding: "utf8", env: { ...process.env, ...vars } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test("the script reads its hyperparameters from the environment and prints one JSON result", () => {
  const out = experiment(env);
  assert.equal(out.experiment, "{{name}}");
  assert.equal(out.config.WINDOW, 32);
  assert.equal(out.config.SEED, 3);
  assert.equal(out.results.tokens_scored, 3 * 31); // 96 tokens = 3 windows of 32, each scoring 31
  assert.ok(Number.isFinite(out.results.perplexity) && out.results.perplexity > 1);
  const n = out.results.sample.tokens.length;
  assert.ok(n >= 1 && n <= 8, n + " tokens sampled"); // fewer than 8 when the model samples its end token
});

test("the same seed gives the same sample; another seed, another", () => {
  const a = run(configFrom(env)), b = run(configFrom(env)), c = run(configFrom({ ...env, SEED: "4" }));
  assert.deepEqual(a.sample.tokens, b.sample.tokens);
  assert.equal(a.perplexity, b.perplexity);
  assert.notDeepEqual(a.sample.tokens, c.sample.tokens);
});

test("a malformed hyperparameter is refused with its name", () => {
  assert.throws(() => configFrom({ WINDOW: "many" }), /WINDOW/);
});
`;

export const SAMPLE_TEXT = `It was the best of times, it was the worst of times, it was the age of wisdom, it was the
age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season
of Light, it was the season of Darkness, it was the spring of hope, it was the winter of despair,
we had everything before us, we had nothing before us, we were all going direct to Heaven, we were
all going direct the other way -- in short, the period was so far like the present period, that
some of its noisiest authorities insisted on its being received, for good or for evil, in the
superlative degree of comparison only.

There were a king with a large jaw and a queen with a plain face, on the throne of England; there
were a king with a large jaw and a queen with a fair face, on the throne of France. In both
countries it was clearer than crystal to the lords of the State preserves of loaves and fishes,
that things in general were settled for ever.
`;

export const EXPERIMENT_README = `# {{name}}

An experiment on [toy]({{toyPath}}): it scores a text under a GGUF model (negative
log-likelihood and perplexity, by windows) and samples a continuation, through toy's library API
(\`import { … } from "toy"\`). Every hyperparameter is an environment variable, and each run prints
one JSON line, so a sweep is a shell loop:

\`\`\`sh
npm install
npm test
TOY_MODEL=path/to/model.gguf node experiment.mjs
for w in 64 128 256; do TOY_MODEL=model.gguf WINDOW=$w node experiment.mjs; done >> results.jsonl
\`\`\`

| variable | default | what it sets |
|---|---|---|
| \`TOY_MODEL\` | toy's default model | a GGUF file, or a name \`toy list\` prints (\`hf:ORG/REPO/FILE\`, \`ollama:NAME:TAG\`) |
| \`TEXT_FILE\` | \`data/sample.txt\` | the text to score |
| \`MAX_TOKENS\` | 1024 | score the first MAX_TOKENS tokens |
| \`WINDOW\` | 128 | tokens per window, each scored from an empty KV cache |
| \`PROMPT\` | "Once upon a time" | the prompt of the sample |
| \`GENERATE\` | 32 | tokens to sample (0: none) |
| \`TEMPERATURE\`, \`TOP_K\`, \`SEED\` | 0.8, 40, 0 | sampling |
| \`BACKEND\`, \`THREADS\` | cpu when built, all cores | compute backend |

Output: \`{"experiment", "config": {…every variable…}, "results": {model, architecture, backend,
tokens_scored, nll, perplexity, sample: {text, tokens, tokens_per_s}, seconds}}\`.

\`test/experiment.test.mjs\` runs the script on a tiny random model that \`test/tiny-model.mjs\`
writes with toy's GGUF writer, so the tests need no download. toy is linked from its checkout
(\`"toy": "file:…"\` in package.json); \`.npmrc\` keeps \`npm install\` from rebuilding it.

The API it uses is described in toy's \`docs/framework.md\`.
`;
