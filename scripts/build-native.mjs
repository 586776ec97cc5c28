// Builds the native cpu backend (build/Release/toy_native.node) with node-gyp, against the
// headers of the running Node when they are installed (so nothing is downloaded).
// Never fails the install: without a compiler toy runs on the ts backend, and says so.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

function warn(why) {
  console.warn(`toy: native cpu backend not built (${why}); using the ts backend`);
  process.exit(0);
}

if (process.env.TOY_SKIP_NATIVE) warn("TOY_SKIP_NATIVE is set");

function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  try { candidates.push(require.resolve("node-gyp/bin/node-gyp.js")); } catch {}
  // npm bundles node-gyp: look beside the npm that runs us, and beside node.
  const npmCli = process.env.npm_execpath;
  if (npmCli) candidates.push(join(dirname(npmCli), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  const prefix = resolve(dirname(process.execPath), "..");
  candidates.push(join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  candidates.push(join(dirname(process.execPath), "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  try {
    const r = spawnSync("npm", ["root", "-g"], { encoding: "utf8" });
    if (r.status === 0) candidates.push(join(r.stdout.trim(), "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  } catch {}
  return candidates.find((p) => p && existsSync(p));
}

function findNodeDir() {
  if (process.env.npm_config_nodedir && existsSync(join(process.env.npm_config_nodedir, "include", "node", "node_api.h"))) return process.env.npm_config_nodedir;
  const prefix = resolve(dirname(process.execPath), "..");
  if (existsSync(join(prefix, "include", "node", "node_api.h"))) return prefix;
  return undefined; // node-gyp will look in its cache (and download if it must)
}

const gyp = findNodeGyp();
if (!gyp) warn("node-gyp not found");
const nodedir = findNodeDir();
const common = ["--release", ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
const quiet = !process.env.TOY_NATIVE_VERBOSE;
// configure + build (not rebuild): an existing addon stays in place until the new one is linked.
const gypRun = (cmd) => spawnSync(process.execPath, [gyp, cmd, ...common], { cwd: root, stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit", encoding: "utf8" });
let r = gypRun("configure");
if (r.status === 0) r = gypRun("build");
const out = join(root, "build", "Release", "toy_native.node");
if (r.status !== 0 || !existsSync(out)) {
  const log = quiet ? `${r.stdout ?? ""}${r.stderr ?? ""}` : "";
  const line = log.split("\n").find((l) => /error|not found|No such/i.test(l));
  warn(r.error ? r.error.message : line ? line.trim().slice(0, 200) : `node-gyp exited with ${r.status}`);
}
console.log(`toy: native cpu backend built (${out})`);
