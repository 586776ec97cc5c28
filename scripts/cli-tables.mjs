// Prints docs/cli.md's section for a command, from `toy --manifest` (so the doc follows the code):
//   node scripts/cli-tables.mjs "train lora" "train from-scratch" ...
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url));
const manifest = JSON.parse(execFileSync(process.execPath, [bin, "--manifest"], { encoding: "utf8" }));
const all = [];
const walk = (cmds) => { for (const c of cmds) { all.push(c); walk(c.commands ?? []); } };
walk(manifest.commands);
for (const name of process.argv.slice(2)) {
  const c = all.find((x) => x.name === name);
  if (!c) throw new Error(`no command ${name}`);
  const arg = (a) => (a.required ? `<${a.name}>` : `[${a.name}]`);
  const args = (c.arguments ?? []).map((a) => " " + arg(a)).join("");
  const lines = [`### \`toy ${c.name}${args}\``, "", c.description, ""];
  for (const a of c.arguments ?? []) lines.push(`- \`${arg(a)}\` — ${a.description}`);
  if ((c.arguments ?? []).length) lines.push("");
  lines.push("| flag | type | default | |", "|---|---|---|---|");
  for (const f of c.flags) {
    const type = f.choices ? `${f.type} (${f.choices.join(", ")})` : f.type;
    lines.push(`| \`${f.flags}\` | ${type} | ${f.default === null || f.default === undefined ? "" : "`" + JSON.stringify(f.default) + "`"} | ${f.description} |`);
  }
  lines.push("", `exit codes: ${c.exit_codes.map((e) => e.code ?? e).join(", ")}`, "");
  process.stdout.write(lines.join("\n") + "\n");
}
