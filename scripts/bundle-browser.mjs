// Bundle the in-browser model (dist/src/browser/inBrowser.js, see src/browser/) into one ES
// module, dist/browser/toy-browser.js, which `toy serve` sends at GET /toy-browser.js.
// The only substitution: the native cpu backend (a Node-API addon) is replaced by
// backends/cpu/browser.js, which says it is absent. Any other module on the path that needs
// Node (a node: builtin, fs, the addon) makes esbuild fail here, and with it the build; so does
// a use of Node's globals (Buffer, process, require), which are not imports.

import { build } from "esbuild";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const cpuInBrowser = fileURLToPath(new URL("../dist/src/backends/cpu/browser.js", import.meta.url));

/** backends/index.js imports ./cpu/index.js: in the browser, the absent cpu backend instead. */
const noNativeBackend = {
  name: "toy-no-native-backend",
  setup(b) {
    b.onResolve({ filter: /^\.\/cpu\/index\.js$/ }, (args) =>
      args.importer.endsWith("/backends/index.js") ? { path: cpuInBrowser } : undefined);
  },
};

let result;
try {
  result = await build({
    absWorkingDir: root,
    entryPoints: ["dist/src/browser/inBrowser.js"],
    outfile: "dist/browser/toy-browser.js",
    bundle: true, format: "esm", platform: "browser", target: "es2022",
    sourcemap: true, logLevel: "warning",
    plugins: [noNativeBackend], write: false,
  });
} catch {
  console.error("bundle-browser: the browser bundle failed (above: which module imports what the browser lacks)");
  process.exit(1);
}

// Node's globals are not imports, so esbuild lets them through: refuse them here.
const NODE_GLOBALS = /\b(Buffer\.|process\.|__dirname|__filename|require\()/;
const js = result.outputFiles.find((f) => f.path.endsWith(".js"));
const hit = js.text.split("\n").map((line, i) => ({ line, i })).find(({ line }) => NODE_GLOBALS.test(line));
if (hit) {
  console.error(`bundle-browser: the browser bundle uses a Node global at line ${hit.i + 1}: ${hit.line.trim()}`);
  const source = js.text.split("\n").slice(0, hit.i).reverse().find((l) => l.startsWith("// dist/") || l.startsWith("// node_modules/"));
  if (source) console.error(`  (in ${source.slice(3)})`);
  process.exit(1);
}
mkdirSync(dirname(result.outputFiles[0].path), { recursive: true });
for (const f of result.outputFiles) writeFileSync(f.path, f.contents);
