// Make the CLI entry point executable after tsc writes it.
import { chmodSync, existsSync } from "node:fs";
const bin = new URL("../dist/src/cli/main.js", import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);

// The chat page's in-browser model (src/browser/): bundled for the browser with esbuild, a
// devDependency; an installed package ships the bundle already built in dist/.
const bundler = new URL("./bundle-browser.mjs", import.meta.url);
let esbuild = true;
try { await import("esbuild"); } catch { esbuild = false; }
if (esbuild) await import(bundler.href);
else console.warn("postbuild: esbuild is not installed; dist/browser/toy-browser.js (the chat page's in-browser mode) not rebuilt");
