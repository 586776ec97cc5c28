// Every example in examples/ runs, in quick mode, as a child process, and says what it should:
// the loss went down, every token got a log-probability, the picture has both runs, the files
// it promises exist. An example is found by being there (examples/*.ts); one without checks of
// its own here is still run (exit 0, some output) and must have its section in examples/README.md.
// Without SmolLM2 in the shared fixtures the examples that need a model fall back to the one
// from-scratch saves (run first below), so this file needs nothing outside the repository.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { projectRoot } from "./helpers/fixtures.js";

const names = readdirSync(join(projectRoot, "examples")).filter((f) => f.endsWith(".ts")).map((f) => f.replace(/\.ts$/, "")).sort()
  // from-scratch first: the others fall back to its model when SmolLM2 is not here.
  .sort((a, b) => Number(b === "from-scratch") - Number(a === "from-scratch"));
const out = mkdtempSync(join(tmpdir(), "toy-examples-"));
test.after(() => rmSync(out, { recursive: true, force: true }));

/** Run dist/examples/NAME.js in quick mode, writing under the temporary folder. */
function run(name: string, args = ["--quick"]) {
  const r = spawnSync(process.execPath, [join(projectRoot, "dist", "examples", `${name}.js`), ...args], {
    cwd: projectRoot, encoding: "utf8", timeout: 300_000, env: { ...process.env, TOY_EXAMPLES_OUT: out },
  });
  assert.equal(r.status, 0, `${name} exited with ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The two numbers of a "LABEL A → B" line. */
function fromTo(stdout: string, label: string): [number, number] {
  const m = new RegExp(`${label} (-?[\\d.]+) → (-?[\\d.]+)`).exec(stdout);
  assert.ok(m, `no "${label} A → B" line in:\n${stdout}`);
  return [Number(m[1]), Number(m[2])];
}

const checks: Record<string, (stdout: string, dir: string) => void> = {
  "from-scratch"(stdout, dir) {
    const [before, after] = fromTo(stdout, "validation loss");
    assert.ok(before > 5 && after < before - 1, `validation loss ${before} → ${after}`);
    assert.equal(readGGUFHeader(join(dir, "model.gguf")).metadata.get("general.architecture"), "llama");
    assert.match(readFileSync(join(dir, "loss.svg"), "utf8"), /<g class="series"[\s\S]*<\/svg>\n$/);
    assert.match(stdout, /trained model \(.*model\.gguf\):\n {2}Once upon a time, there was/);
  },
  "warm-start"(stdout, dir) {
    const [before, after] = fromTo(stdout, "validation loss");
    assert.ok(after < before, `validation loss ${before} → ${after}`);
    assert.ok(existsSync(join(dir, "model.gguf")));
    assert.match(stdout, /after \(.*model\.gguf\): greedy story:\n {2}"Once upon a time, there was/);
  },
  lora(stdout, dir) {
    const [before, after] = fromTo(stdout, "loss on the lesson");
    assert.ok(after < before, `loss ${before} → ${after}`);
    assert.ok(existsSync(join(dir, "adapter.gguf")));
    assert.match(stdout, /^base model \+ adapter: "Toy is a/m);
  },
  generate(stdout) {
    assert.match(stdout, /\[greedy\] prompt: "Once upon a time, there was a little robot who" \(\d+ tokens\)/);
    const seeds = [...stdout.matchAll(/^ {2}seed (\d): (.*)$/gm)].map((m) => [m[1], m[2]]);
    assert.deepEqual(seeds.map((s) => s[0]), ["1", "2", "1"]);
    assert.equal(seeds[0][1], seeds[2][1], "the same seed gave two different texts");
    assert.match(stdout, /^ {2}assistant: |^\[chat\] skipped: /m);
    assert.match(stdout, /the same tokens as generate\(\) chose/);
  },
  logprobs(stdout) {
    const scored = Number(/(\d+) tokens, (\d+) scored/.exec(stdout)![2]);
    const rows = [...stdout.matchAll(/^ +(\d+) {2}(".*?") +(-?\d+\.\d{3}) +\S+ {3}(.*)$/gm)];
    assert.equal(rows.length, scored, "one row per scored token");
    assert.deepEqual(rows.map((r) => Number(r[1])), Array.from({ length: scored }, (_, i) => i + 1));
    for (const r of rows) assert.ok(Number(r[3]) <= 0, `log p ${r[3]} > 0`);
    const m = /= (-?[\d.]+) \(scoreTokens said (-?[\d.]+)\)/.exec(stdout)!;
    assert.equal(m[1], m[2], "the log-probability by hand differs from scoreTokens'");
    assert.match(stdout, /perplexity [\d.]+/);
  },
  "compare-runs"(stdout, dir) {
    const svg = readFileSync(join(dir, "loss.svg"), "utf8");
    const series = [...svg.matchAll(/<g class="series" data-label="([^"]*)">/g)].map((m) => m[1]);
    assert.deepEqual(series, ["lr 3e-3", "lr 3e-4"]);
    for (const label of series) assert.match(svg, new RegExp(`<text x="26" y="\\d+">${label} validation</text>`));
    for (const lr of ["3e-3", "3e-4"]) {
      const [before, after] = fromTo(stdout, `lr ${lr}: validation loss`);
      assert.ok(after < before, `lr ${lr}: ${before} → ${after}`);
    }
    assert.match(stdout, /both loss curves: .*loss\.svg/);
  },
  vit(stdout, dir) {
    const m = /accuracy ([\d.]+)% → ([\d.]+)% \((\d+) of (\d+) held-out images\)/.exec(stdout);
    assert.ok(m, `no "accuracy A% → B% (C of N held-out images)" line in:\n${stdout}`);
    const [before, after, correct, heldOut] = m.slice(1).map(Number);
    assert.ok(after > before + 10, `accuracy ${before}% → ${after}%`);
    // The confusion matrix: a header of the 10 classes, then one row per true class, adding up
    // to the held-out images, its diagonal to the ones it got right.
    const table = /^true\\pred +0 +1 +2 +3 +4 +5 +6 +7 +8 +9\n((?:\d +(?:\d+ +){9}\d+\n){10})/m.exec(stdout);
    assert.ok(table, `no confusion matrix in:\n${stdout}`);
    const rows = table[1].trim().split("\n").map((r) => r.trim().split(/ +/).slice(1).map(Number));
    assert.equal(rows.flat().reduce((a, v) => a + v, 0), heldOut);
    assert.equal(rows.reduce((a, r, i) => a + r[i], 0), correct);
    const header = readGGUFHeader(join(dir, "vit.gguf")).metadata;
    assert.equal(header.get("general.architecture"), "vit");
    assert.equal(header.get("vit.class_count"), 10);
    assert.match(stdout, new RegExp(`loaded back: accuracy ${after.toFixed(2)}%, the same as before saving`));
    assert.equal([...stdout.matchAll(/^ {2}image \d: true \d, predicted \d \([\d.]+%\)/gm)].length, 8);
    assert.match(stdout, /^#\d+: true \d, predicted \d \([\d.]+%\)/m);
    assert.match(readFileSync(join(dir, "loss.svg"), "utf8"), /<g class="series"[\s\S]*<\/svg>\n$/);
  },
};

const readme = readFileSync(join(projectRoot, "examples", "README.md"), "utf8");

for (const name of names) {
  test(`examples/${name}.ts runs in quick mode and does what examples/README.md says`, () => {
    assert.ok(readme.includes(`npm run example -- ${name}`), `examples/README.md has no section for ${name}`);
    const stdout = run(name);
    assert.ok(stdout.trim().length > 0, `${name} printed nothing`);
    const check = checks[name];
    if (check) check(stdout, join(out, name));
    else console.log(`(examples/${name}.ts has no checks of its own in test/examples.test.ts: it ran and printed ${stdout.split("\n").length} lines)`);
  });
}

test("examples/vit.ts --synthetic: without MNIST it trains on digits it draws itself", () => {
  const stdout = run("vit", ["--quick", "--synthetic"]);
  assert.match(stdout, /^data: digits drawn by examples\/vit\.ts/m);
  checks.vit(stdout, join(out, "vit"));
});

test("npm run example: no name or an unknown one lists the examples and exits 2", () => {
  for (const args of [[], ["no-such-example"]]) {
    const r = spawnSync(process.execPath, [join(projectRoot, "scripts", "example.mjs"), ...args], { cwd: projectRoot, encoding: "utf8" });
    assert.equal(r.status, 2);
    for (const name of names) assert.match(r.stderr, new RegExp(`^ {2}${name} +\\S`, "m"));
    if (args.length) assert.match(r.stderr, /no example named "no-such-example"/);
  }
});
