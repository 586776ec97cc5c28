// V8 keeps new JavaScript objects in a young generation that it grows (from 1 MB semi-spaces up
// to 16 MB in Node 20) as objects keep surviving its collections; the pages it grows into stay
// resident. toy's processes make few JavaScript objects (activations come from the workspace,
// tensor/workspace.ts), but a decode step's small ones still grew it over a run: SmolLM2 tg64
// peaked 15–20 MB higher for it (docs/internals.md, Performance notes). Keeping it at its
// starting size costs more frequent, tiny collections, nothing measurable in t/s.

import { setFlagsFromString } from "node:v8";

/** Keep V8's young generation at its starting size; call first thing in a process's entry point. */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}
