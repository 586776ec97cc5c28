// node dist/bench/grammar.js [MODEL] [--rounds R] [--tokens N] [--threads T]
//
// The cost of structured output per generated token: SmolLM2 answers the same chat prompt
// free and constrained (json_object, and a JSON Schema), rounds interleaved. Reports
//   - the constraint's own time (masking + advancing) per token, as a share of the
//     unconstrained decode step: cold (a grammar compiled for this run, no cached masks) and
//     warm (the grammar's masks cached by earlier requests, as in a running server);
//   - whole-step time per token, constrained ÷ free: wall clock (what a client waits for) and CPU
//     time of all threads. The CPU ratio is the larger with several threads: while the main thread
//     masks logits, the pool's workers spin waiting for the next job (up to TOY_SPIN_US), and
//     that spinning is counted too.
// CPU time is process.cpuUsage() (all threads), so other load on the machine counts less.

import { selectBackend } from "../src/backends/index.js";
import { loadModelFromFile } from "../src/archs/index.js";
import { Generation, type TokenFilter } from "../src/engines/generate.js";
import { GrammarConstraint, TokenGrammar, vocabTrie } from "../src/engines/grammar/tokenMask.js";
import { jsonObjectGbnf, schemaToGbnf } from "../src/engines/grammar/schema.js";
import { chatTemplateFor } from "../src/io/chat/template.js";
import { readGGUF } from "../src/io/gguf/reader.js";
import { tokenizerFromMetadata } from "../src/io/tokenizer/index.js";
import { fixturesDir } from "../test/helpers/fixtures.js";

const args = process.argv.slice(2);
const value = (name: string, fallback: string) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const path = args[0] && !args[0].startsWith("--") ? args[0] : `${fixturesDir()}/models/SmolLM2-135M-Instruct.Q4_1.gguf`;
const rounds = Number(value("--rounds", "3"));
const maxTokens = Number(value("--tokens", "64"));
const threads = Number(value("--threads", "2"));

const device = selectBackend(undefined, { threads });
const file = readGGUF(path);
const model = loadModelFromFile(file, device);
const tokenizer = tokenizerFromMetadata(file.metadata, path);
const template = chatTemplateFor(file.metadata, tokenizer);
const prompt = template.encode([{ role: "user", content: "Describe a person (name, age, city, hobbies) as JSON." }]);
const stopIds = template.stopIds();
const schema = {
  type: "object", additionalProperties: false, required: ["name", "age", "city", "hobbies"],
  properties: { name: { type: "string" }, age: { type: "integer", minimum: 0, maximum: 120 }, city: { type: "string" }, hobbies: { type: "array", items: { type: "string" }, maxItems: 5 } },
};
const grammars = { json_object: jsonObjectGbnf(), json_schema: schemaToGbnf(schema) };
const trie = vocabTrie(tokenizer);
const bytes = (id: number) => tokenizer.bytes(id);

/** A filter that counts the time spent in it: wall clock on the calling thread (process CPU time
 *  would also count the pool's workers spinning meanwhile). */
class Timed implements TokenFilter {
  us = 0;
  constructor(private inner: GrammarConstraint) {}
  maskLogits(l: Float32Array) { const t = performance.now(); this.inner.maskLogits(l); this.us += (performance.now() - t) * 1000; }
  accept(id: number) { const t = performance.now(); this.inner.accept(id); this.us += (performance.now() - t) * 1000; }
  get complete() { return this.inner.complete; }
}
const elapsed = (t: NodeJS.CpuUsage) => { const d = process.cpuUsage(t); return d.user + d.system; };

function run(seed: number, filter?: Timed) {
  const t = process.cpuUsage();
  const g = new Generation(model, prompt, { maxTokens, stopIds: filter ? stopIds : new Set(), sampling: { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1, repeatLastN: 64, seed }, constraint: filter });
  const afterPrompt = elapsed(t), wall0 = performance.now();
  while (g.step());
  const n = g.tokens.length;
  return { perToken: (elapsed(t) - afterPrompt) / n, wallPerToken: ((performance.now() - wall0) * 1000) / n, filterPerToken: filter ? filter.us / n : 0, n, text: tokenizer.decode(g.tokens) };
}

const warm: Record<string, TokenGrammar> = {};
for (const [k, gbnf] of Object.entries(grammars)) warm[k] = new TokenGrammar(gbnf, trie, bytes);
run(0); // warm the model up
const rows: Record<string, { perToken: number[]; wall: number[]; filter: number[]; n: number }> = {};
const add = (k: string, r: ReturnType<typeof run>) => {
  const row = (rows[k] ??= { perToken: [], wall: [], filter: [], n: 0 });
  row.perToken.push(r.perToken); row.wall.push(r.wallPerToken); row.filter.push(r.filterPerToken); row.n += r.n;
};
for (let round = 0; round < rounds; round++) {
  add("free", run(round));
  for (const [k, gbnf] of Object.entries(grammars)) {
    add(`${k} cold`, run(round, new Timed(new GrammarConstraint(new TokenGrammar(gbnf, trie, bytes), stopIds))));
    const r = run(round, new Timed(new GrammarConstraint(warm[k], stopIds)));
    add(`${k} warm`, r);
    if (round === 0) process.stderr.write(`${k}: ${r.text}\n`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const free = median(rows.free.perToken), freeWall = median(rows.free.wall);
console.log(`free decode: ${(freeWall / 1000).toFixed(2)} ms per token, ${(free / 1000).toFixed(2)} ms CPU (${rows.free.n} tokens, ${threads} threads)`);
console.log("| output | tokens | constraint ms/token | share of a free step (wall) | step ms/token (wall) | wall ÷ free | CPU ÷ free |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const [k, r] of Object.entries(rows)) {
  if (k === "free") continue;
  const f = median(r.filter), p = median(r.perToken), w = median(r.wall);
  console.log(`| ${k} | ${r.n} | ${(f / 1000).toFixed(3)} | ${((100 * f) / freeWall).toFixed(1)}% | ${(w / 1000).toFixed(2)} | ${(w / freeWall).toFixed(3)} | ${(p / free).toFixed(3)} |`);
}
