// Algorithm cards: every model renders a card, the card parses back into the same configuration
// (render → parse → build gives the same forward, bit for bit), the CLI round trip prints the
// same JSON bytes, and malformed cards are usage errors (exit 2) that name the line.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configOf, loadModelFromFile, type ModelConfig } from "../src/archs/index.js";
import { canonicalConfig, configOfHeader, parseCard, readCard, renderCard } from "../src/card/index.js";
import { UsageError } from "../src/errors.js";
import { readGGUF, readGGUFHeader, type GGUFFile } from "../src/io/gguf/reader.js";
import { toy } from "./helpers/cli.js";
import { fixtures } from "./helpers/fixtures.js";
import { writeTinyLlama } from "./helpers/tiny-model.js";

const fx = fixtures();
const modelsDir = () => join(fx.dir, "models");
const fixtureModels = (): string[] => fx.skip ? [] : readdirSync(modelsDir()).filter((f) => f.endsWith(".gguf")).sort();

const tmp = mkdtempSync(join(tmpdir(), "toy-card-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const tinyPath = join(tmp, "tiny.gguf");
writeTinyLlama(tinyPath, { nLayer: 2, ctx: 32 });

/** Logits of a few tokens from a model built from `config` (or the file's own). */
function logits(file: GGUFFile, config: ModelConfig | undefined, ids: number[]): Float32Array {
  const model = loadModelFromFile(file, "ts", config);
  return model.forward(Int32Array.from(ids), model.newCache(ids.length), "all").data.slice();
}

function assertSameBits(a: Float32Array, b: Float32Array, what: string): void {
  assert.equal(a.length, b.length, `${what}: logits length`);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length), ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  const i = ua.findIndex((x, j) => x !== ub[j]);
  assert.equal(i, -1, `${what}: logit ${i} differs: ${a[i]} vs ${b[i]}`);
}

/** render → parse → build, on the CLI and in process, for one model file. */
function roundTrip(path: string, ids: number[] | null): void {
  const file = readGGUF(path);
  const config = configOf(file);
  // The card holds every field: canonicalConfig drops nothing the architecture sets.
  assert.deepEqual(canonicalConfig(config), config);
  assert.deepEqual(Object.keys(canonicalConfig(config)).sort(), Object.keys(config).sort());
  assert.deepEqual(configOfHeader(readGGUFHeader(path), path), config, "header-only config");

  const card = renderCard(config, { name: String(file.metadata.get("general.name") ?? "") || undefined });
  const parsed = parseCard(card);
  assert.deepEqual(parsed, config);
  assert.equal(renderCard(parsed, readCard(card).meta), card, "re-rendering the parsed card gives the same card");

  const described = toy(["describe", path]);
  assert.equal(described.status, 0, described.stderr);
  const cardPath = join(tmp, `${path.split("/").pop()}.card.txt`);
  writeFileSync(cardPath, described.stdout);
  const direct = toy(["describe", path, "--json"]);
  const viaCard = toy(["describe", "--parse", cardPath, "--json"]);
  assert.equal(direct.status, 0, direct.stderr);
  assert.equal(viaCard.status, 0, viaCard.stderr);
  assert.equal(viaCard.stdout, direct.stdout, "describe --parse CARD --json prints what describe MODEL --json prints");
  assert.equal(direct.stdout.split("\n").length, 2, "exactly one JSON line");
  assert.deepEqual(JSON.parse(direct.stdout), config);
  const rerendered = toy(["describe", "--parse", cardPath]);
  assert.equal(rerendered.status, 0, rerendered.stderr);
  assert.equal(rerendered.stdout, described.stdout, "describe --parse CARD re-renders the same card");

  if (ids) assertSameBits(logits(file, parsed, ids), logits(file, undefined, ids), path);
}

test("the tiny writer model: render → parse → build gives the same forward", () => {
  roundTrip(tinyPath, [1, 5, 9, 200, 33, 7]);
});

for (const name of fixtureModels()) {
  const big = name.startsWith("SmolLM2");
  test(`${name}: card round trip${big ? " (forward on 2 tokens)" : ""}`, { skip: fx.skip }, () => {
    // 12 tokens: past gemma2-tiny's window of 8, so the windowed layers differ from the others.
    roundTrip(join(modelsDir(), name), big ? [1, 2] : [1, 7, 42, 300, 5, 11, 2, 99, 3, 64, 128, 17]);
  });
}
if (fx.skip) test("fixture cards", { skip: fx.skip }, () => {});

test("SmolLM2's card carries its real numbers", { skip: fx.skip }, () => {
  const r = toy(["describe", join(modelsDir(), "SmolLM2-135M-Instruct.Q4_1.gguf")]);
  assert.equal(r.status, 0, r.stderr);
  const card = r.stdout;
  for (const line of ["d_e = 576", "L = 30", "H = 9", "H_kv = 3", "d_h = 64", "d_ff = 1536", "N_V = 49152", "θ = 100000", "ℓ_max = 8192", "tied_output = yes"]) {
    assert.match(card, new RegExp(`^  ${line} `, "m"), line);
  }
  assert.match(card, /^Algorithm: llama — /);
  assert.match(card, /W_e ∈ R\^\(49152×576\)/);
  assert.match(card, /W_k,l ∈ R\^\(192×576\)/);
  assert.match(card, /RMSNorm\(X \| γ¹_l, ε\)\s+▷ \[T, 576\]/);
  assert.match(card, /\(SiLU\(X̃ W_gate,lᵀ\) ⊙ X̃ W_up,lᵀ\) W_down,lᵀ\s+▷ hidden \[T, 1536\]/);
  assert.match(card, /134,515,008 numbers/);
  assert.match(card, /^ 1: for t = 0\.\.T−1: X\[t\] ← W_e\[x\[t\]\]/m);
});

test("gemma2's card shows its soft-caps, window, post-norms and √d scaling", { skip: fx.skip }, () => {
  const card = toy(["describe", join(modelsDir(), "gemma2-tiny.gguf")]).stdout;
  for (const s of ["c_attn = 50", "c_out = 30", "w = 8", "window_pattern = 2", "s_e = 8", "post_norms = yes", "ffn = GeGLU", "rope = neox"]) assert.ok(card.includes(`  ${s} `), s);
  assert.match(card, /S ← c_attn · tanh\(S \/ c_attn\)/);
  assert.match(card, /Z ← c_out · tanh\(Z \/ c_out\)/);
  assert.match(card, /X ← X \+ RMSNorm\(A \| γ̂¹_l, ε\)/);
  assert.match(card, /when l is even, t − w < t′/);
});

test("olmoe's and gpt2's cards show experts, q/k norms, learned positions and the fused QKV", { skip: fx.skip }, () => {
  const olmoe = toy(["describe", join(modelsDir(), "olmoe-tiny.gguf")]).stdout;
  assert.match(olmoe, /𝓔 ← the 2 experts e with the largest π_e/);
  assert.match(olmoe, /Q ← RMSNorm\(Q \| γ\^q_l, ε\)/);
  const gpt2 = toy(["describe", join(modelsDir(), "gpt2-tiny.gguf")]).stdout;
  assert.match(gpt2, /X\[t\] ← W_e\[x\[t\]\] \+ W_p\[t\]/);
  assert.match(gpt2, /\[Q \| K \| V\] ← X̃ W_qkv,lᵀ \+ b_qkv,l/);
  assert.match(gpt2, /LayerNorm\(X \| γ¹_l, β¹_l, ε\)/);
  assert.match(gpt2, /^  rope = none /m);
  assert.doesNotMatch(gpt2, /θ =/);
});

test("every configuration field is on the card and parses back", () => {
  const base = configOf(readGGUF(tinyPath));
  const variants: [string, (c: ModelConfig) => void][] = [
    ["arch", (c) => { c.arch = "qwen2"; }],
    ["nVocab", (c) => { c.nVocab = 1000; }],
    ["nEmbd", (c) => { c.nEmbd = 48; }],
    ["nLayer", (c) => { c.nLayer = 7; }],
    ["nHead", (c) => { c.nHead = 8; }],
    ["nKVHead", (c) => { c.nKVHead = 1; }],
    ["headDim", (c) => { c.headDim = 12; c.rope!.dims = 12; }],
    ["nFF", (c) => { c.nFF = 100; }],
    ["contextLength", (c) => { c.contextLength = 4096; }],
    ["norm.kind", (c) => { c.norm.kind = "layer"; }],
    ["norm.eps", (c) => { c.norm.eps = 1e-6; }],
    ["rope.base", (c) => { c.rope!.base = 1234567.5; }],
    ["rope.dims", (c) => { c.rope!.dims = 4; }],
    ["rope.style", (c) => { c.rope!.style = "neox"; }],
    ["rope.freqScale", (c) => { c.rope!.freqScale = 0.25; }],
    ["rope.freqFactors", (c) => { c.rope!.freqFactors = true; }],
    ["rope", (c) => { c.rope = null; }],
    ["attention.qkvBias", (c) => { c.attention.qkvBias = true; }],
    ["attention.fusedQKV", (c) => { c.attention.fusedQKV = true; }],
    ["attention.outBias", (c) => { c.attention.outBias = true; }],
    ["attention.qkNorm head", (c) => { c.attention.qkNorm = "head"; }],
    ["attention.qkNorm full", (c) => { c.attention.qkNorm = "full"; }],
    ["attention.scale", (c) => { c.attention.scale = 0.1 + 0.2; }],
    ["attention.softcap", (c) => { c.attention.softcap = 50; }],
    ["attention.window", (c) => { c.attention.window = 4096; }],
    ["attention.windowPattern", (c) => { c.attention.window = 512; c.attention.windowPattern = 6; }],
    ["rope.sliding", (c) => { c.attention.window = 512; c.attention.windowPattern = 6; c.rope!.sliding = { base: 10000, freqScale: 1 }; }],
    ["ffn.kind geglu", (c) => { c.ffn.kind = "geglu"; }],
    ["ffn.kind mlp", (c) => { c.ffn.kind = "mlp"; }],
    ["ffn.bias", (c) => { c.ffn.bias = true; }],
    ["ffn.experts", (c) => { c.ffn.experts = 8; c.ffn.expertsUsed = 2; }],
    ["embedScale", (c) => { c.embedScale = Math.sqrt(c.nEmbd); }],
    ["postNorms", (c) => { c.postNorms = true; }],
    ["finalSoftcap", (c) => { c.finalSoftcap = 30; }],
    ["tiedOutput", (c) => { c.tiedOutput = !c.tiedOutput; }],
  ];
  const baseCard = renderCard(base);
  for (const [what, change] of variants) {
    const c = structuredClone(base);
    change(c);
    const card = renderCard(c);
    assert.notEqual(card, baseCard, `${what} does not show on the card`);
    assert.deepEqual(parseCard(card), c, `${what} does not round-trip`);
  }
});

test("numbers round-trip exactly (shortest float64 form)", () => {
  const base = configOf(readGGUF(tinyPath));
  for (const eps of [Math.fround(1e-5), 1e-5, Math.fround(1e-6), 1 / 3, 5e-324, 1.7976931348623157e308, 0.1 + 0.2]) {
    const c = { ...structuredClone(base), norm: { kind: "rms" as const, eps } };
    assert.equal(parseCard(renderCard(c)).norm.eps, eps, String(eps));
  }
});

/** A card with one line changed. */
function edited(card: string, from: RegExp, to: string): string {
  assert.match(card, from);
  return card.replace(from, to);
}

test("malformed cards are usage errors that name the line", () => {
  const card = renderCard(configOf(readGGUF(tinyPath)), { name: "tiny" });
  const lineOf = (text: string, needle: string) => text.split("\n").findIndex((l) => l.includes(needle)) + 1;
  const cases: [string, string, RegExp][] = [
    ["not a number", edited(card, /^  d_ff = 64 /m, "  d_ff = lots "), /card:\d+: d_ff = lots: expected a whole number/],
    ["a missing field", edited(card, /^  H_kv = 2 .*\n/m, ""), /hyperparameter H_kv is missing/],
    ["an unknown field", edited(card, /^  L = 2 /m, "  layers = 2 "), /unknown hyperparameter "layers"/],
    ["a duplicate", edited(card, /^(  L = 2 .*\n)/m, "$1$1"), /L is given twice/],
    ["a bad word", edited(card, /^  ffn = SwiGLU /m, "  ffn = ReLU "), /ffn = ReLU: expected one of SwiGLU, GeGLU, MLP/],
    ["an inconsistent algorithm", edited(card, /^  d_ff = 64 /m, "  d_ff = 96 "), /card:38: "Parameters: θ, 35,232 numbers" does not follow from the hyperparameters; expected "Parameters: θ, 41,376 numbers"/],
    ["heads not a multiple", edited(card, /^  H_kv = 2 /m, "  H_kv = 3 "), /H = 4 attention heads are not a multiple of H_kv = 3/],
    ["a cut-off card", card.split("\n").slice(0, -4).join("\n"), /ends early/],
    ["no title", card.split("\n").slice(1).join("\n"), /card:\d+: expected the title/],
    ["empty", "", /empty card/],
  ];
  for (const [what, text, message] of cases) {
    assert.throws(() => parseCard(text), (e: unknown) => e instanceof UsageError && message.test(e.message), what);
  }
  // The line number points at the bad line.
  const bad = edited(card, /^  d_ff = 64 /m, "  d_ff = lots ");
  assert.throws(() => parseCard(bad), new RegExp(`card:${lineOf(bad, "d_ff = lots")}: `));
});

test("toy describe: malformed cards and wrong arguments exit 2 with a message", () => {
  const good = toy(["describe", tinyPath]);
  assert.equal(good.status, 0, good.stderr);
  const badPath = join(tmp, "bad.card.txt");
  writeFileSync(badPath, good.stdout.replace(/^  d_e = 32 /m, "  d_e = -1 "));
  for (const [args, message] of [
    [["describe", "--parse", badPath], /bad\.card\.txt:\d+: d_e = -1: expected a whole number/],
    [["describe", "--parse", badPath, "--json"], /d_e = -1/],
    [["describe", "--parse", join(tmp, "missing.txt")], /cannot read the card/],
    [["describe"], /exactly one of MODEL or --parse CARD/],
    [["describe", tinyPath, "--parse", badPath], /exactly one of MODEL or --parse CARD/],
  ] as [string[], RegExp][]) {
    const r = toy(args);
    assert.equal(r.status, 2, `toy ${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stdout, "");
  }
  const missing = toy(["describe", join(tmp, "no-such-model.gguf")]);
  assert.equal(missing.status, 3, missing.stderr);
});
