// `toy new`: both scaffolds install offline against this checkout and pass their own tests.
// Slow (two npm installs, two npm test runs): kept to exactly that.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { projectRoot } from "./helpers/fixtures.js";
import { toy, toyJson } from "./helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "toy-new-"));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const npmVersion = spawnSync("npm", ["--version"], { encoding: "utf8" });
const skip = npmVersion.status === 0 ? false : "SKIPPED: npm is not on PATH";

function npm(cwd: string, args: string[]): string {
  // The parent `npm test` exports npm_* settings and node --test its NODE_TEST_CONTEXT; the
  // project's own npm and test runner must not inherit them.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "NODE_TEST_CONTEXT"));
  const r = spawnSync("npm", args, { cwd, encoding: "utf8", env, timeout: 300_000 });
  assert.equal(r.status, 0, `npm ${args.join(" ")} in ${cwd}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

for (const kind of ["experiment", "lib"] as const) {
  test(`toy new ${kind === "lib" ? "--lib " : ""}makes a project that installs offline and passes its tests`, { skip, timeout: 600_000 }, () => {
    const name = `my-${kind}`;
    const made = toyJson<{ name: string; kind: string; path: string; files: string[] }>(["new", name, ...(kind === "lib" ? ["--lib"] : []), "--dir", dir, "--json"]);
    assert.equal(made.kind, kind);
    assert.equal(made.path, join(dir, name));
    for (const f of ["package.json", "README.md", ".npmrc"]) assert.ok(made.files.includes(f), f);
    const pkg = JSON.parse(readFileSync(join(made.path, "package.json"), "utf8"));
    assert.equal(pkg.dependencies?.toy ?? pkg.devDependencies?.toy, `file:${projectRoot}`);

    npm(made.path, ["install", "--offline", "--no-audit", "--no-fund"]);
    assert.equal(realpathSync(join(made.path, "node_modules", "toy")), realpathSync(projectRoot));
    const out = npm(made.path, ["test"]);
    assert.match(out, /# fail 0/);
    assert.doesNotMatch(out, /# pass 0\b/);
  });
}

test("toy new refuses a bad name and a folder that is not empty", () => {
  assert.equal(toy(["new", "Bad Name", "--dir", dir]).status, 2);
  const again = toy(["new", "taken", "--dir", dir]);
  assert.equal(again.status, 0, again.stderr);
  assert.ok(existsSync(join(dir, "taken", "experiment.mjs")));
  const r = toy(["new", "taken", "--dir", dir]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /already exists and is not empty/);
});
