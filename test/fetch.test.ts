// toy fetch against a local imitation of the Hugging Face hub (127.0.0.1 only): the resolve
// endpoint answers HEAD and GET with a redirect to a separate storage server and the hub's
// headers (x-repo-commit, x-linked-etag, x-linked-size), storage answers ranges with 206, and the
// error answers carry x-error-code as the hub's do. Downloads resume, verify and rename atomically.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { downloadFile } from "../src/io/hub/download.js";
import { pickGGUF, typeInName } from "../src/io/hub/pick.js";
import { toy, toyBin } from "./helpers/cli.js";
import { tinyLlamaBytes } from "./helpers/tiny-model.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-fetch-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");
const gitSha1 = (b: Buffer) => createHash("sha1").update(`blob ${b.length}\0`).update(b).digest("hex");
const COMMIT = "c0ffee".padEnd(40, "0");
const TOKEN = "hf_secret";

// --- the imitation hub --------------------------------------------------------------------------

interface HubRepo { files: Record<string, Buffer>; needsToken?: boolean; gated?: boolean; movedTo?: string }
const model = Buffer.from(tinyLlamaBytes({ nEmbd: 64, nFF: 128 })); // a few hundred kB: many chunks
const model8 = Buffer.from(tinyLlamaBytes({ seed: 7 }));
const readme = Buffer.from("# Tiny\nA tiny model.\n");
const repos: Record<string, HubRepo> = {
  "TestOrg/Tiny-GGUF": { files: { "README.md": readme, "tiny-f16.gguf": model8, "tiny-q8_0.gguf": model8, "tiny-Q4_K_M.gguf": model, "mmproj-tiny-f16.gguf": model8 } },
  "TestOrg/Odd-GGUF": { files: { "a.gguf": model, "b.gguf": model8 } },
  "TestOrg/Bad-Sha": { files: { "model.gguf": model } },
  "private/model": { files: { "model.gguf": model }, needsToken: true },
  "gated/model": { files: { "model.gguf": model }, gated: true },
  "OldOrg/Tiny-GGUF": { files: {}, movedTo: "TestOrg/Tiny-GGUF" },
};

/** Requests seen, for asserting what was asked (range, authorization). */
interface Seen { server: "hub" | "storage"; method: string; url: string; range?: string; auth?: string }
let seen: Seen[] = [];
/** How many storage GETs to cut off halfway through the body. */
let drops = 0;
const blobs = new Map<string, Buffer>();
for (const r of Object.values(repos)) for (const b of Object.values(r.files)) blobs.set(sha256(b), b);

let hub: Server;
let storage: Server;
let hubUrl = "";
let storageUrl = "";
let closedUrl = ""; // a port nothing listens on

function fail(res: ServerResponse, status: number, code: string | undefined, message: string) {
  res.writeHead(status, { ...(code ? { "x-error-code": code } : {}), "x-error-message": message, "content-type": "application/json" });
  res.end(JSON.stringify({ error: message }));
}

function hubHandler(req: IncomingMessage, res: ServerResponse) {
  seen.push({ server: "hub", method: req.method!, url: req.url!, auth: req.headers.authorization });
  const url = new URL(req.url!, hubUrl);
  const api = /^\/api\/models\/([^/]+\/[^/]+)(?:\/revision\/([^/]+))?$/.exec(url.pathname);
  if (api) {
    const repo = repos[decodeURIComponent(api[1])];
    if (!repo) return fail(res, 404, "RepoNotFound", "Repository not found");
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ id: api[1], sha: COMMIT, siblings: Object.keys(repo.files).map((rfilename) => ({ rfilename })) }));
  }
  const m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
  if (!m) return fail(res, 404, undefined, "Not found");
  const [name, rev, file] = [decodeURIComponent(m[1]), decodeURIComponent(m[2]), m[3].split("/").map(decodeURIComponent).join("/")];
  const repo = repos[name];
  if (!repo) return fail(res, 404, "RepoNotFound", "Repository Not Found for url");
  if (repo.movedTo) {
    res.writeHead(307, { location: `/${repo.movedTo}/resolve/${m[2]}/${m[3]}` });
    return res.end();
  }
  if (repo.needsToken && req.headers.authorization !== `Bearer ${TOKEN}`) return fail(res, 401, undefined, "Invalid credentials in Authorization header");
  if (repo.gated) return fail(res, 403, "GatedRepo", `Access to model ${name} is restricted and you are not in the authorized list.`);
  if (rev !== "main" && rev !== COMMIT) return fail(res, 404, "RevisionNotFound", `Invalid rev id: ${rev}`);
  const bytes = repo.files[file];
  if (!bytes) return fail(res, 404, "EntryNotFound", `${file} does not exist on "${rev}"`);
  if (file.endsWith(".md")) { // a plain git file: no redirect, its etag is git's blob sha1
    res.writeHead(200, { etag: `"${gitSha1(bytes)}"`, "content-length": bytes.length, "x-repo-commit": COMMIT });
    return res.end(req.method === "HEAD" ? undefined : bytes);
  }
  const sha = sha256(bytes);
  const claimed = name === "TestOrg/Bad-Sha" ? sha256("something else") : sha;
  res.writeHead(302, {
    location: `${storageUrl}/blobs/${sha}?X-Amz-Signature=abc`, "x-repo-commit": COMMIT,
    "x-linked-etag": `"${claimed}"`, "x-linked-size": bytes.length, etag: `"${gitSha1(bytes)}"`, "content-length": 0,
  });
  res.end();
}

function storageHandler(req: IncomingMessage, res: ServerResponse) {
  seen.push({ server: "storage", method: req.method!, url: req.url!, range: req.headers.range, auth: req.headers.authorization });
  const url = new URL(req.url!, storageUrl);
  const bytes = blobs.get(url.pathname.replace("/blobs/", ""));
  if (!bytes) return fail(res, 404, undefined, "NoSuchKey");
  const etag = `"${sha256(bytes)}"`;
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
  let start = 0;
  if (range) {
    start = Number(range[1]);
    if (start >= bytes.length) { res.writeHead(416, { "content-range": `bytes */${bytes.length}` }); return res.end(); }
    res.writeHead(206, { "content-range": `bytes ${start}-${bytes.length - 1}/${bytes.length}`, "content-length": bytes.length - start, etag, "accept-ranges": "bytes" });
  } else {
    res.writeHead(200, { "content-length": bytes.length, etag, "accept-ranges": "bytes" });
  }
  if (req.method === "HEAD") return res.end();
  const body = bytes.subarray(start);
  if (drops > 0) { // send part of the body, then drop the connection
    drops--;
    res.write(body.subarray(0, Math.floor(body.length / 2)));
    setTimeout(() => res.socket?.destroy(), 100);
    return;
  }
  res.end(body);
}

const listen = (s: Server) => new Promise<string>((ok) => s.listen(0, "127.0.0.1", () => ok(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)));

before(async () => {
  hub = createServer(hubHandler);
  storage = createServer(storageHandler);
  hubUrl = await listen(hub);
  storageUrl = await listen(storage);
  const closed = createServer();
  closedUrl = await listen(closed);
  await new Promise((ok) => closed.close(ok));
});
after(() => { hub.closeAllConnections(); storage.closeAllConnections(); hub.close(); storage.close(); });
beforeEach(() => { seen = []; drops = 0; });

// --- running toy (asynchronously: the servers live in this process) --------------------------------

let n = 0;
const freshDir = () => join(tmp, `dl-${n++}`);

function toyAsync(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const home = join(tmp, "home");
  mkdirSync(home, { recursive: true });
  return new Promise((ok) => {
    const child = spawn(process.execPath, [toyBin, ...args], {
      env: { ...process.env, HOME: home, HF_HOME: "", HF_TOKEN: "", HUGGING_FACE_HUB_TOKEN: "", HF_TOKEN_PATH: "", HF_ENDPOINT: hubUrl, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => ok({ status, stdout, stderr }));
  });
}

const noPartials = (dir: string) => !existsSync(dir) || readdirSync(dir).every((f) => !f.endsWith(".part"));

// --- tests ---------------------------------------------------------------------------------------

describe("toy fetch", () => {
  test("downloads a file through the redirect, verifies its sha256 and prints its path", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-Q4_K_M.gguf", "--dir", dir]);
    assert.equal(r.status, 0, r.stderr);
    const path = join(dir, "tiny-Q4_K_M.gguf");
    assert.equal(r.stdout, `${path}\n`);
    assert.deepEqual(readFileSync(path), model);
    assert.ok(noPartials(dir));
    assert.ok(seen.some((s) => s.server === "hub" && s.method === "HEAD" && s.url === "/TestOrg/Tiny-GGUF/resolve/main/tiny-Q4_K_M.gguf"));
    assert.ok(seen.some((s) => s.server === "storage" && s.method === "GET"));
    // The fetched file is a model toy runs.
    const inf = toy(["infer", path, "--ids", "1,2", "--max-tokens", "2", "--json", "--backend", "ts"]);
    assert.equal(inf.status, 0, inf.stderr);

    // Again: already there, checked, not downloaded a second time.
    seen = [];
    const again = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-Q4_K_M.gguf", "--dir", dir, "--json"]);
    assert.equal(again.status, 0, again.stderr);
    const out = JSON.parse(again.stdout);
    assert.equal(out.already_present, true);
    assert.equal(out.sha256, sha256(model));
    assert.equal(out.commit, COMMIT);
    assert.ok(!seen.some((s) => s.server === "storage"));
  });

  test("--json describes the download; --revision goes into the URL", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-q8_0.gguf", "--dir", dir, "--revision", COMMIT, "--json"]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, "");
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out, {
      repo: "TestOrg/Tiny-GGUF", file: "tiny-q8_0.gguf", revision: COMMIT, commit: COMMIT, path: join(dir, "tiny-q8_0.gguf"),
      size_bytes: model8.length, sha256: sha256(model8), verified: "sha256", resumed_from: 0, already_present: false,
    });
    assert.ok(seen.some((s) => s.url === `/TestOrg/Tiny-GGUF/resolve/${COMMIT}/tiny-q8_0.gguf`));
    const bad = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-q8_0.gguf", "--dir", dir, "--revision", "nope"]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /revision nope not found in TestOrg\/Tiny-GGUF/);
  });

  test("with no FILE, the repo's file list picks Q4_K_M", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "--dir", dir]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${join(dir, "tiny-Q4_K_M.gguf")}\n`);
    assert.match(r.stderr, /fetching tiny-Q4_K_M\.gguf \(of 3 GGUF files/);
    assert.ok(seen.some((s) => s.url === "/api/models/TestOrg/Tiny-GGUF"));
    // No storage type in the names: the list, and a usage error.
    const odd = await toyAsync(["fetch", "TestOrg/Odd-GGUF", "--dir", freshDir()]);
    assert.equal(odd.status, 2, odd.stderr);
    assert.match(odd.stderr, /name one of:\n\s+a\.gguf\n\s+b\.gguf/);
  });

  test("a dropped connection leaves a .part file that the next run resumes with a range request", async () => {
    const dir = freshDir();
    drops = 1;
    const first = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-Q4_K_M.gguf", "--dir", dir, "--retries", "0"]);
    assert.equal(first.status, 1, first.stderr);
    assert.match(first.stderr, /connection dropped after \d+ of \d+ bytes.*run the same command again to resume/);
    const path = join(dir, "tiny-Q4_K_M.gguf");
    assert.ok(!existsSync(path), "no file under the final name before it is complete");
    const have = statSync(`${path}.part`).size;
    assert.ok(have > 0 && have < model.length, `partial ${have} of ${model.length}`);

    seen = [];
    const second = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-Q4_K_M.gguf", "--dir", dir, "--json"]);
    assert.equal(second.status, 0, second.stderr);
    assert.equal(JSON.parse(second.stdout).resumed_from, have);
    assert.deepEqual(seen.filter((s) => s.server === "storage").map((s) => s.range), [`bytes=${have}-`]);
    assert.equal(sha256(readFileSync(path)), sha256(model));
    assert.ok(noPartials(dir));
  });

  test("within one run, a dropped connection is resumed (--retries)", async () => {
    const dir = freshDir();
    drops = 2;
    const r = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-Q4_K_M.gguf", "--dir", dir]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /resuming \(1 of 3\)/);
    const ranges = seen.filter((s) => s.server === "storage").map((s) => s.range);
    assert.equal(ranges.length, 3);
    assert.equal(ranges[0], undefined);
    assert.match(ranges[2]!, /^bytes=\d+-$/);
    assert.deepEqual(readFileSync(join(dir, "tiny-Q4_K_M.gguf")), model);
  });

  test("a sha256 mismatch is detected and nothing is kept", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "TestOrg/Bad-Sha", "model.gguf", "--dir", dir]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /sha256 mismatch: got [0-9a-f]{64}, the hub says [0-9a-f]{64}; the download was discarded/);
    assert.ok(!existsSync(join(dir, "model.gguf")));
    assert.ok(noPartials(dir));
  });

  test("a plain git file (no redirect) is verified by its git blob sha1", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "README.md", "--dir", dir, "--json"]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).verified, "sha1");
    assert.deepEqual(readFileSync(join(dir, "README.md")), readme);
  });

  test("a renamed repo's redirect is followed", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "OldOrg/Tiny-GGUF", "tiny-q8_0.gguf", "--dir", dir]);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(readFileSync(join(dir, "tiny-q8_0.gguf")), model8);
  });

  test("401 without a token; HF_TOKEN is sent to the hub and never to the storage host", async () => {
    const dir = freshDir();
    const r = await toyAsync(["fetch", "private/model", "model.gguf", "--dir", dir]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /401 Unauthorized for private\/model\/model\.gguf.*set HF_TOKEN/);
    seen = [];
    const ok = await toyAsync(["fetch", "private/model", "model.gguf", "--dir", dir], { HF_TOKEN: TOKEN });
    assert.equal(ok.status, 0, ok.stderr);
    assert.ok(seen.some((s) => s.server === "hub" && s.auth === `Bearer ${TOKEN}`));
    assert.ok(seen.filter((s) => s.server === "storage").every((s) => s.auth === undefined));
    const wrong = await toyAsync(["fetch", "private/model", "model.gguf", "--dir", freshDir()], { HF_TOKEN: "hf_wrong" });
    assert.equal(wrong.status, 1);
    assert.match(wrong.stderr, /the token in HF_TOKEN was not accepted/);
  });

  test("403 for a gated repo, 404 for a missing file or repo", async () => {
    const cases: [string[], RegExp][] = [
      [["gated/model", "model.gguf"], /gated\/model is gated: accept its conditions at http:\/\/127\.0\.0\.1:\d+\/gated\/model/],
      [["TestOrg/Tiny-GGUF", "absent.gguf"], /absent\.gguf not found in TestOrg\/Tiny-GGUF at revision main/],
      [["Nobody/Nothing", "x.gguf"], /repository Nobody\/Nothing not found on http:\/\/127\.0\.0\.1:\d+/],
      [["Nobody/Nothing"], /repository Nobody\/Nothing not found/],
    ];
    for (const [args, message] of cases) {
      const dir = freshDir();
      const r = await toyAsync(["fetch", ...args, "--dir", dir]);
      assert.equal(r.status, 1, `${args}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.ok(!existsSync(dir) || readdirSync(dir).length === 0, "nothing written");
    }
  });

  test("a host that cannot be reached is a clear error", async () => {
    const r = await toyAsync(["fetch", "TestOrg/Tiny-GGUF", "tiny-q8_0.gguf", "--dir", freshDir()], { HF_ENDPOINT: closedUrl });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /cannot reach 127\.0\.0\.1:\d+: ECONNREFUSED/);
  });

  test("bad arguments are usage errors", async () => {
    const r = await toyAsync(["fetch", "not a repo"]);
    assert.equal(r.status, 2);
  });
});

describe("hub download (library)", () => {
  test("a stale .part longer than the file is started over", async () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "tiny-q8_0.gguf.part"), Buffer.alloc(model8.length + 10));
    const r = await downloadFile({ repo: "TestOrg/Tiny-GGUF", file: "tiny-q8_0.gguf", dir, endpoint: hubUrl, token: "" });
    assert.equal(r.sha256, sha256(model8));
    assert.deepEqual(readFileSync(r.path), model8);
  });

  test("a .part that is all there is verified and renamed without a request for bytes", async () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "tiny-q8_0.gguf.part"), model8);
    const r = await downloadFile({ repo: "TestOrg/Tiny-GGUF", file: "tiny-q8_0.gguf", dir, endpoint: hubUrl, token: "" });
    assert.equal(r.resumed_from, model8.length);
    assert.ok(!seen.some((s) => s.server === "storage"));
    assert.deepEqual(readFileSync(r.path), model8);
  });

  test("a .part of another file fails verification and is discarded", async () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "tiny-q8_0.gguf.part"), Buffer.alloc(100, 7));
    await assert.rejects(
      downloadFile({ repo: "TestOrg/Tiny-GGUF", file: "tiny-q8_0.gguf", dir, endpoint: hubUrl, token: "" }),
      /sha256 mismatch/,
    );
    assert.ok(noPartials(dir));
    assert.ok(!existsSync(join(dir, "tiny-q8_0.gguf")));
  });

  test("the default file: Q4_K_M first, then Q8_0; never a projector or a shard", () => {
    assert.equal(typeInName("smollm2-135m-instruct-q4_k_m.gguf"), "Q4_K_M");
    assert.equal(typeInName("Llama-3.2-1B-Instruct-Q8_0.gguf"), "Q8_0");
    assert.equal(typeInName("model.fp16.gguf"), "F16");
    assert.equal(typeInName("model.gguf"), undefined);
    assert.deepEqual(pickGGUF(["README.md", "smollm2-135m-instruct-q8_0.gguf", "smollm2-135m-instruct-fp16.gguf"]).file, "smollm2-135m-instruct-q8_0.gguf");
    assert.equal(pickGGUF(["x-Q2_K.gguf", "x-Q4_K_M.gguf", "x-Q8_0.gguf", "mmproj-x-Q4_K_M.gguf"]).file, "x-Q4_K_M.gguf");
    assert.equal(pickGGUF(["big-Q4_K_M-00001-of-00002.gguf", "big-Q4_K_M-00002-of-00002.gguf", "big-Q8_0.gguf"]).file, "big-Q8_0.gguf");
    assert.equal(pickGGUF(["only.gguf", "mmproj.gguf"]).file, "only.gguf");
    assert.equal(pickGGUF(["a.gguf", "b.gguf"]).file, undefined);
  });
});
