// The cpu backend as a browser sees it: absent (it is a Node-API addon). The browser bundle
// (scripts/bundle-browser.mjs) resolves backends/cpu/index.js to this file, so that the
// primitives, which choose their kernels through backends/index.ts, bundle without Node;
// in a browser the model runs on webgpu (src/browser/inBrowser.ts).

import type { CpuBackend } from "./index.js";

export function loadCpuBackend(): CpuBackend | { error: string } {
  return { error: "the native cpu backend does not run in a web browser (use webgpu)" };
}
