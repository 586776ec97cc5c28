// The code in the docs compiles and runs: the blocks marked `<!-- example -->` in
// docs/authoring.md (the worked example) and docs/framework.md are put together, type-checked
// strictly against toy's own declarations (imported as "toy", the package's self-reference),
// and run.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { projectRoot } from "./helpers/fixtures.js";

/** The ```ts blocks that follow a `<!-- example -->` line, in order. */
export function examples(markdown: string): string[] {
  return [...markdown.matchAll(/^<!-- example -->\n```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** Write the doc's example into the package (so that "toy" resolves to it) and compile it. */
function compile(doc: string): { js: string; errors: string[] } {
  const blocks = examples(readFileSync(join(projectRoot, "docs", doc), "utf8"));
  assert.ok(blocks.length > 0, `${doc} has no <!-- example --> blocks`);
  const dir = join(projectRoot, "dist", "doc-examples");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, doc.replace(/\.md$/, ".ts"));
  writeFileSync(file, blocks.join("\n"));
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, types: ["node"], rootDir: dir, outDir: dir,
  });
  const emitted = program.emit();
  const errors = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    return `${doc}${where ? `:${where.line + 1}` : ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
  return { js: file.replace(/\.ts$/, ".js"), errors };
}

test.after(() => rmSync(join(projectRoot, "dist", "doc-examples"), { recursive: true, force: true }));

test("docs/authoring.md: the worked example type-checks, runs and trains", () => {
  const { js, errors } = compile("authoring.md");
  assert.deepEqual(errors, []);
  const r = spawnSync(process.execPath, [js], { encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
  assert.equal(out.arch, "primer");
  assert.equal(out.generated.length, 8);
  assert.ok(out.losses.at(-1) < out.losses[0], `the new architecture trains: ${out.losses.join(", ")}`);
});

test("docs/framework.md: the examples type-check against the library's exports", () => {
  const { errors } = compile("framework.md");
  assert.deepEqual(errors, []);
});
