// npm run example -- NAME [args]: run examples/NAME.ts (compiled to dist/examples/NAME.js) with
// the arguments after NAME (e.g. --quick). No NAME, or one that is not an example: list them, exit 2.
// When the example's source is newer than its compiled file (or there is none yet), build first.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sources = join(root, "examples");

/** Every examples/*.ts, with the first line of its opening comment. */
function examples() {
  return readdirSync(sources).filter((f) => f.endsWith(".ts")).sort().map((f) => {
    const first = readFileSync(join(sources, f), "utf8").split("\n")[0];
    return { name: f.replace(/\.ts$/, ""), about: first.replace(/^\/\/\s*/, "") };
  });
}

const [name, ...args] = process.argv.slice(2);
const known = examples();
if (!name || !known.some((e) => e.name === name)) {
  if (name) process.stderr.write(`no example named "${name}"\n\n`);
  const width = Math.max(...known.map((e) => e.name.length));
  process.stderr.write("usage: npm run example -- NAME [--quick]\n\nexamples (examples/README.md describes each one):\n" +
    known.map((e) => `  ${e.name.padEnd(width)}  ${e.about}`).join("\n") + "\n");
  process.exit(2);
}

const source = join(sources, `${name}.ts`), compiled = join(root, "dist", "examples", `${name}.js`);
const mtime = (p) => statSync(p).mtimeMs;
const helpers = readdirSync(join(sources, "lib")).map((f) => join(sources, "lib", f));
if (!existsSync(compiled) || [source, ...helpers].some((p) => mtime(p) > mtime(compiled))) {
  process.stderr.write(`building (examples/${name}.ts changed since the last build)…\n`);
  const built = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

const r = spawnSync(process.execPath, [compiled, ...args], { stdio: "inherit" });
process.exit(r.status ?? 1);
