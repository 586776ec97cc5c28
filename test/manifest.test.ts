// `toy --manifest` against `--help`: every flag a command's help lists is in the manifest with
// the same default, and every flag in the manifest is in the help; every command is listed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { COMMAND_INFO, type Manifest, type ManifestCommand } from "../src/cli/manifest.js";
import { buildProgram } from "../src/cli/program.js";
import { toy } from "./helpers/cli.js";
import { projectRoot } from "./helpers/fixtures.js";

const run = toy(["--manifest"]);
const manifest = JSON.parse(run.stdout) as Manifest;

/** Lines of one section ("Options:", "Commands:") of a help text. */
function section(help: string, title: string): string[] {
  const lines = help.split("\n");
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && l.trim() === "");
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The long flags a help text's Options section lists, with the default it shows. */
function helpFlags(help: string): Map<string, string | undefined> {
  const flags = new Map<string, string | undefined>();
  const options = section(help, "Options:");
  options.forEach((line, i) => {
    const m = /^ {2}(?:-[A-Za-z], )?(--[\w-]+)/.exec(line);
    if (!m) return;
    // The entry runs on until the next flag line; commander writes "(default: …)" at its end.
    let text = line;
    for (let j = i + 1; j < options.length && !/^ {2}-/.test(options[j]); j++) text += " " + options[j].trim();
    flags.set(m[1], shownDefault(text.trimEnd()));
  });
  return flags;
}

/**
 * The default commander prints at the end of an entry: "(default: 256)", or inside
 * "(choices: "a", "b", default: "a")". Its value is JSON; a description's own "(default: the
 * model's)" is not, and does not count.
 */
function shownDefault(text: string): string | undefined {
  const extra = /\(((?:choices|default|preset|env): [^()]*)\)$/.exec(text)?.[1];
  const value = extra && /(?:^|, )default: (.*?)(?:, (?:preset|env): .*)?$/.exec(extra)?.[1];
  if (value === undefined) return undefined;
  try { JSON.parse(value); return value; } catch { return undefined; }
}

function helpCommands(help: string): string[] {
  return section(help, "Commands:").map((l) => /^ {2}([\w-]+)/.exec(l)?.[1]).filter((n): n is string => !!n && n !== "help");
}

function walk(cmds: ManifestCommand[]): ManifestCommand[] {
  return cmds.flatMap((c) => [c, ...walk(c.commands)]);
}

test("toy --manifest prints one JSON document and exits 0", () => {
  assert.equal(run.status, 0, run.stderr);
  assert.equal(manifest.schema, "toy-manifest/v1");
  assert.deepEqual(Object.keys(manifest.exit_codes), ["0", "1", "2", "3", "4"]);
  assert.ok(manifest.flags.some((f) => f.long === "--manifest"));
});

test("the manifest lists every registered command, and toy --help lists the same", () => {
  const registered = buildProgram().commands.map((c) => c.name());
  assert.deepEqual(manifest.commands.map((c) => c.name), registered);
  assert.deepEqual(helpCommands(toy(["--help"]).stdout), registered);
});

test("every command has its exit codes and JSON output described", () => {
  for (const c of manifest.commands) {
    assert.ok(COMMAND_INFO[c.name], `${c.name}: add it to COMMAND_INFO in src/cli/manifest.ts`);
    assert.ok(c.exit_codes.includes(0) && c.exit_codes.every((x) => String(x) in manifest.exit_codes), c.name);
  }
});

const commands = walk(manifest.commands);
for (const cmd of [{ name: "", flags: manifest.flags } as ManifestCommand, ...commands]) {
  test(`toy ${cmd.name || "(no command)"} --help and the manifest agree on flags and defaults`, () => {
    const r = toy([...cmd.name.split(" ").filter(Boolean), "--help"]);
    assert.equal(r.status, 0, r.stderr);
    const inHelp = helpFlags(r.stdout);
    const inManifest = new Map(cmd.flags.map((f) => [f.long!, f]));
    assert.deepEqual([...inHelp.keys()].sort(), [...inManifest.keys()].sort());
    for (const [long, shown] of inHelp) {
      const f = inManifest.get(long)!;
      assert.equal(shown, f.default === null ? undefined : JSON.stringify(f.default), `${cmd.name} ${long}: default`);
      assert.match(f.type, /^(boolean|string|integer|number|integer\[\]|number\[\]|string\[\])$/);
    }
    if (cmd.name) {
      assert.deepEqual(helpCommands(r.stdout), (cmd.commands ?? []).map((c) => c.name.split(" ").at(-1)));
    }
  });
}

test("flag types are read from the parsers", () => {
  const flag = (cmd: string, long: string) => commands.find((c) => c.name === cmd)!.flags.find((f) => f.long === long)!;
  assert.equal(flag("infer", "--max-tokens").type, "integer");
  assert.equal(flag("infer", "--temperature").type, "number");
  assert.equal(flag("infer", "--ids").type, "integer[]");
  assert.equal(flag("infer", "--json").type, "boolean");
  assert.deepEqual(flag("infer", "--backend").choices, ["ts", "cpu", "webgpu"]);
  assert.equal(flag("fetch", "--revision").default, "main");
});

test("docs/cli.md documents every command and flag", () => {
  const doc = readFileSync(join(projectRoot, "docs", "cli.md"), "utf8");
  for (const c of commands) {
    if (c.commands.length > 0) continue; // a group: its subcommands carry the flags
    assert.ok(doc.includes(`### \`toy ${c.name}`), `docs/cli.md: no section for toy ${c.name}`);
    for (const f of c.flags.filter((f) => f.long !== "--help")) assert.ok(doc.includes(`\`${f.flags}\``), `docs/cli.md: toy ${c.name} ${f.flags} is not documented`);
  }
});
