// The README's tour is true: every `npx toy …` line of it runs and succeeds (the fetch against a
// local stand-in for the Hugging Face hub, the server until it answers, the interactive chat
// with one line on its standard input).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toy, toyAsync, toyBin } from "./helpers/cli.js";
import { fixtures, projectRoot } from "./helpers/fixtures.js";

const fx = fixtures();

/** The tour's command lines, with $M and the fixture paths filled in. */
function tourCommands(): { line: string; args: string[] }[] {
  const readme = readFileSync(join(projectRoot, "README.md"), "utf8");
  const block = /## A short tour\s+```sh\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "README has a tour code block");
  const model = join(fx.dir, "models", "SmolLM2-135M-Instruct.Q4_1.gguf");
  const data = join(fx.dir, "..", "data");
  return block[1].split("\n").filter((l) => l.startsWith("npx toy ")).map((l) => {
    const cmd = l.replace(/\s+#.*$/, "").replace("npx toy ", "").replaceAll("$M", model).replaceAll("../shared/data", data);
    const args = [...cmd.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]);
    return { line: l, args };
  });
}

/** A hub that serves one GGUF (stories260K) the way {endpoint}/{repo}/resolve/{rev}/{file} does. */
async function fakeHub(file: Buffer, name: string) {
  const sha = createHash("sha256").update(file).digest("hex");
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/api/models/")) {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ siblings: [{ rfilename: "README.md" }, { rfilename: name }] }));
      return;
    }
    if (req.url?.includes(`/resolve/main/${name}`)) {
      res.writeHead(200, { "content-length": file.length, etag: `"${sha}"`, "x-linked-etag": `"${sha}"`, "x-linked-size": file.length, "x-repo-commit": "0".repeat(40) });
      res.end(req.method === "HEAD" ? undefined : file);
      return;
    }
    res.writeHead(404, { "x-error-code": "EntryNotFound" }).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test("every command of the README tour runs", { skip: fx.skip, timeout: 900_000 }, async () => {
  const commands = tourCommands();
  assert.ok(commands.length >= 10, "the tour lists its commands");
  for (const { line, args } of commands) {
    if (args[0] === "serve") {
      const portArg = args.indexOf("--port");
      const child = spawn(process.execPath, [toyBin, ...args.slice(0, portArg), "--port", "0", ...args.slice(portArg + 2)], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr.on("data", (d) => {
          stderr += d;
          const m = /http:\/\/127\.0\.0\.1:\d+/.exec(stderr);
          if (m) resolve(m[0]);
        });
        child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
      });
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 200, line);
      const page = await fetch(`${url}/`);
      assert.match(await page.text(), /<html/i);
      child.kill("SIGTERM");
      continue;
    }
    const r = args.includes("--chat") && args[args.indexOf("--chat") + 1]?.startsWith("--") !== false && args.at(-1) === "--chat"
      ? toy([...args, "--max-tokens", "8"], { input: "Hi!\n", timeout: 300_000 })
      : toy(args, { timeout: 600_000 });
    assert.equal(r.status, 0, `${line}\n${r.stderr}`);
    assert.ok((r.stdout + r.stderr).trim().length > 0, `${line} printed nothing`);
  }
});

test("the tour's fetch line works against a hub stand-in", { skip: fx.skip }, async () => {
  const name = "smollm2-135m-instruct-q8_0.gguf";
  const { server, endpoint } = await fakeHub(readFileSync(join(fx.dir, "models", "stories260K.gguf")), name);
  try {
    const dir = mkdtempSync(join(tmpdir(), "toy-tour-"));
    const r = await toyAsync(["fetch", "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "--dir", dir], { env: { HF_ENDPOINT: endpoint } });
    assert.equal(r.status, 0, r.stderr);
    const path = r.stdout.trim();
    assert.equal(path, join(dir, name));
    assert.equal(toy(["infer", path, "--ids", "1,2", "--max-tokens", "2"]).status, 0);
  } finally {
    server.close();
  }
});
