// toy list and model names: a fake home directory holding a Hugging Face cache, an Ollama store
// and LM Studio folders (built here from fixture files, or tiny written models when the fixtures
// are absent) is listed completely, and every entry runs with `toy infer`.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { readGGUFHeader } from "../src/io/gguf/reader.js";
import { toyBin } from "./helpers/cli.js";
import { fixturesDir } from "./helpers/fixtures.js";
import { tinyLlama, writeTinyLlama } from "./helpers/tiny-model.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-list-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Every variable that points discovery somewhere, unset (the empty string counts as unset). */
const CLEAN_ENV = {
  HF_HOME: "", HF_HUB_CACHE: "", HUGGINGFACE_HUB_CACHE: "", XDG_CACHE_HOME: "", OLLAMA_MODELS: "",
  TOY_MODELS_PATH: "", TOY_MODEL: "", HF_TOKEN: "",
};

function run(args: string[], env: Record<string, string>, cwd: string) {
  const r = spawnSync(process.execPath, [toyBin, ...args], { encoding: "utf8", cwd, env: { ...process.env, ...CLEAN_ENV, ...env }, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const write = (path: string, text: string) => { mkdirSync(dirname(path), { recursive: true }); writeFileSync(path, text); };

/** A model file to build the stores from: a fixture when there are fixtures, else a tiny llama. */
function source(fixture: string, seed: number): string {
  const dir = fixturesDir();
  const out = join(tmp, "sources", `${fixture}`);
  mkdirSync(dirname(out), { recursive: true });
  if (dir) copyFileSync(join(dir, "models", fixture), out);
  else writeTinyLlama(out, { seed });
  return out;
}

interface Expected { name: string; source: string; file: string; path: string }

const home = join(tmp, "home");
const work = join(tmp, "work"); // the working directory: no ./data in it
const extra = join(tmp, "extra"); // $TOY_MODELS_PATH
const expected: Expected[] = [];
const COMMIT_MAIN = "a".repeat(40);
const COMMIT_OLD = "b".repeat(40);

before(() => {
  mkdirSync(work, { recursive: true });
  const stories = source("stories260K.gguf", 1);
  const q4 = source("llama-q-Q4_K_M.gguf", 2);
  const qwen = source("qwen2-tiny.gguf", 3);
  const llama3 = source("llama3-tiny.gguf", 4);

  // Hugging Face cache: two snapshots of one repo, files linked into blobs/ by their sha256.
  const repo = join(home, ".cache", "huggingface", "hub", "models--TestOrg--Stories-GGUF");
  const blob = sha256(stories);
  mkdirSync(join(repo, "blobs"), { recursive: true });
  copyFileSync(stories, join(repo, "blobs", blob));
  write(join(repo, "refs", "main"), COMMIT_MAIN);
  for (const commit of [COMMIT_MAIN, COMMIT_OLD]) {
    mkdirSync(join(repo, "snapshots", commit), { recursive: true });
    symlinkSync(`../../blobs/${blob}`, join(repo, "snapshots", commit, "stories260K.gguf"));
  }
  // A link whose blob never arrived: skipped with a note.
  symlinkSync("../../blobs/0000", join(repo, "snapshots", COMMIT_MAIN, "unfinished.gguf"));
  expected.push({ name: "hf:TestOrg/Stories-GGUF/stories260K.gguf", source: "hf", file: stories, path: join(repo, "snapshots", COMMIT_MAIN, "stories260K.gguf") });
  expected.push({ name: `hf:TestOrg/Stories-GGUF@${COMMIT_OLD.slice(0, 12)}/stories260K.gguf`, source: "hf", file: stories, path: join(repo, "snapshots", COMMIT_OLD, "stories260K.gguf") });

  // Ollama: manifests naming blobs/sha256-<hex>, in the default library and a user namespace.
  const store = join(home, ".ollama", "models");
  for (const [ns, model, tag, file] of [["library", "tinyllama", "latest", q4], ["someone", "qwen-tiny", "q8", qwen]] as const) {
    const digest = sha256(file);
    mkdirSync(join(store, "blobs"), { recursive: true });
    copyFileSync(file, join(store, "blobs", `sha256-${digest}`));
    const config = '{"model_format":"gguf"}';
    const configDigest = createHash("sha256").update(config).digest("hex");
    write(join(store, "blobs", `sha256-${configDigest}`), config);
    write(join(store, "manifests", "registry.ollama.ai", ns, model, tag), JSON.stringify({
      schemaVersion: 2, mediaType: "application/vnd.docker.distribution.manifest.v2+json",
      config: { mediaType: "application/vnd.docker.container.image.v1+json", digest: `sha256:${configDigest}`, size: config.length },
      layers: [
        { mediaType: "application/vnd.ollama.image.model", digest: `sha256:${digest}`, size: readFileSync(file).length },
        { mediaType: "application/vnd.ollama.image.template", digest: `sha256:${configDigest}`, size: 10 },
      ],
    }));
    const display = ns === "library" ? `${model}:${tag}` : `${ns}/${model}:${tag}`;
    expected.push({ name: `ollama:${display}`, source: "ollama", file, path: join(store, "blobs", `sha256-${digest}`) });
  }
  // A manifest that is not JSON: a note, not a failure.
  write(join(store, "manifests", "registry.ollama.ai", "library", "broken", "latest"), "{not json");

  // LM Studio: both of its folders.
  const lms = join(home, ".lmstudio", "models", "lmstudio-community", "Llama3-Tiny-GGUF", "llama3-tiny-Q8_0.gguf");
  mkdirSync(dirname(lms), { recursive: true });
  copyFileSync(llama3, lms);
  expected.push({ name: "lmstudio:lmstudio-community/Llama3-Tiny-GGUF/llama3-tiny-Q8_0.gguf", source: "lmstudio", file: llama3, path: lms });
  const lmsCache = join(home, ".cache", "lm-studio", "models", "pub", "Stories", "stories.gguf");
  mkdirSync(dirname(lmsCache), { recursive: true });
  copyFileSync(stories, lmsCache);
  expected.push({ name: "lmstudio:pub/Stories/stories.gguf", source: "lmstudio", file: stories, path: lmsCache });

  // $TOY_MODELS_PATH: a tiny model written here (its parameter count is known independently), and
  // a corrupt file.
  mkdirSync(extra, { recursive: true });
  writeTinyLlama(join(extra, "tiny.gguf"));
  writeFileSync(join(extra, "corrupt.gguf"), "GGUF but not really");
  expected.push({ name: "local:tiny.gguf", source: "local", file: join(extra, "tiny.gguf"), path: join(extra, "tiny.gguf") });
});

const env = () => ({ HOME: home, TOY_MODELS_PATH: extra });

interface Entry { name: string; source: string; architecture: string; parameters: number; type: string; size_bytes: number; path: string }

function listJson(e: Record<string, string> = env(), cwd = work): { entries: Entry[]; stderr: string } {
  const r = run(["list", "--json"], e, cwd);
  assert.equal(r.status, 0, r.stderr);
  return { entries: (JSON.parse(r.stdout) as Entry[]).filter((x) => x.path.startsWith(tmp)), stderr: r.stderr };
}

describe("toy list", () => {
  test("lists every model of the fake home, with the fields read from the headers", () => {
    const { entries, stderr } = listJson();
    assert.deepEqual(entries.map((e) => e.name).sort(), expected.map((e) => e.name).sort());
    for (const want of expected) {
      const got = entries.find((e) => e.name === want.name)!;
      const header = readGGUFHeader(want.file);
      assert.equal(got.source, want.source);
      assert.equal(got.path, want.path, `${want.name}: the path reported is the store's own (the snapshot, not the blob)`);
      assert.equal(got.architecture, header.metadata.get("general.architecture"));
      assert.equal(got.parameters, header.tensors.reduce((s, t) => s + t.dims.reduce((p, d) => p * d, 1), 0));
      assert.equal(got.size_bytes, readFileSync(want.file).length);
      assert.deepEqual(Object.keys(got).sort(), ["architecture", "name", "parameters", "path", "size_bytes", "source", "type"]);
    }
    const tiny = entries.find((e) => e.name === "local:tiny.gguf")!;
    const shapes = [...tinyLlama().shapes.values()];
    assert.equal(tiny.parameters, shapes.reduce((s, dims) => s + dims.reduce((p, d) => p * d, 1), 0));
    assert.equal(tiny.architecture, "llama");
    assert.equal(tiny.type, "F32");
    if (fixturesDir()) assert.equal(entries.find((e) => e.name === "ollama:tinyllama:latest")!.type, "Q4_K_M");
    // What could not be read is a note, not a failure.
    assert.match(stderr, /unfinished\.gguf.*blob is missing/);
    assert.match(stderr, /ollama:broken:latest.*not a readable manifest/);
    assert.match(stderr, /local:corrupt\.gguf: skipped/);
  });

  test("the table shows the same models", () => {
    const r = run(["list"], env(), work);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^NAME\s+SOURCE\s+ARCH\s+PARAMS\s+TYPE\s+SIZE\s+PATH/);
    for (const want of expected) assert.ok(r.stdout.includes(want.name), `${want.name} in the table`);
  });

  test("every entry runs with toy infer", () => {
    for (const want of expected) {
      const r = run(["infer", want.name, "--ids", "1,2", "--max-tokens", "2", "--json", "--backend", "ts"], env(), work);
      assert.equal(r.status, 0, `${want.name}: ${r.stderr}`);
      const out = JSON.parse(r.stdout) as { tokens: number[] };
      assert.equal(out.tokens.length, 2, want.name);
    }
  });

  test("short names resolve: without the prefix, an Ollama name without its tag, a file name", () => {
    for (const name of ["tinyllama", "tinyllama:latest", "someone/qwen-tiny:q8", "TestOrg/Stories-GGUF/stories260K.gguf", "stories260K", "tiny.gguf", "hf:TestOrg/Stories-GGUF", `hf:TestOrg/Stories-GGUF@${COMMIT_OLD.slice(0, 8)}/stories260K.gguf`, "lmstudio:lmstudio-community/Llama3-Tiny-GGUF"]) {
      const r = run(["tokenize", name, "--text", "a", "--json"], env(), work);
      assert.equal(r.status, 0, `${name}: ${r.stderr}`);
    }
  });

  test("unknown names are a ModelFileError (exit 3) that says where toy looked", () => {
    const cases: [string, RegExp][] = [
      ["hf:Nope/Nothing/x.gguf", /not in the Hugging Face cache.*huggingface[/\\]hub.*toy fetch Nope\/Nothing/],
      ["hf:TestOrg/Stories-GGUF/absent.gguf", /absent\.gguf is not in the cached snapshots/],
      ["ollama:nothing:7b", /no such model in the Ollama store.*ollama pull nothing:7b/],
      ["lmstudio:a/b/c.gguf", /not in the LM Studio folders/],
      ["local:nope.gguf", /not found in/],
      ["no-such-model", /no such model file, and no model of that name/],
    ];
    for (const [name, message] of cases) {
      const r = run(["infer", name, "--ids", "1", "--max-tokens", "1", "--json", "--backend", "ts"], env(), work);
      assert.equal(r.status, 3, `${name}: exit ${r.status}: ${r.stderr}`);
      assert.match(r.stderr, message, name);
    }
  });

  test("the variables that move the stores are honoured", () => {
    const empty = join(tmp, "empty-home");
    mkdirSync(empty, { recursive: true });
    const { entries } = listJson({
      HOME: empty, HF_HUB_CACHE: join(home, ".cache", "huggingface", "hub"), OLLAMA_MODELS: join(home, ".ollama", "models"),
    });
    assert.deepEqual(entries.map((e) => e.source).sort(), ["hf", "hf", "ollama", "ollama"]);
    const viaHome = listJson({ HOME: empty, HF_HOME: join(home, ".cache", "huggingface"), OLLAMA_MODELS: join(tmp, "none") }).entries;
    assert.deepEqual(viaHome.map((e) => e.source), ["hf", "hf"]);
  });

  test("./data is listed as local models", () => {
    const dir = join(tmp, "work-with-data");
    mkdirSync(join(dir, "data"), { recursive: true });
    writeTinyLlama(join(dir, "data", "mine.gguf"));
    const { entries } = listJson({ HOME: join(tmp, "nobody"), OLLAMA_MODELS: join(tmp, "none") }, dir);
    assert.deepEqual(entries.map((e) => [e.name, e.source]), [["local:mine.gguf", "local"]]);
    const r = run(["infer", "mine", "--ids", "1,2", "--max-tokens", "1", "--json", "--backend", "ts"], { HOME: join(tmp, "nobody") }, dir);
    assert.equal(r.status, 0, r.stderr);
  });

  test("nothing found: an empty list, and where toy looked and how to get a model", () => {
    const nobody = join(tmp, "nobody");
    mkdirSync(nobody, { recursive: true });
    const e = { HOME: nobody, OLLAMA_MODELS: join(nobody, "ollama-store") };
    const json = run(["list", "--json"], e, work);
    assert.equal(json.status, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), []);
    const r = run(["list"], e, work);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, "");
    for (const place of [join(nobody, ".cache", "huggingface", "hub"), join(nobody, "ollama-store"), join(nobody, ".lmstudio", "models"), join(nobody, ".cache", "lm-studio", "models"), join(work, "data")]) {
      assert.ok(r.stderr.includes(place), `mentions ${place}: ${r.stderr}`);
    }
    assert.match(r.stderr, /no GGUF models found/);
    assert.match(r.stderr, /toy fetch HuggingFaceTB\/SmolLM2-135M-Instruct-GGUF/);
  });
});
