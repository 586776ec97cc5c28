// V8 keeps new JavaScript objects in a young generation that it grows (from 1 MB semi-spaces up
// to 16 MB in Node 20) as objects keep surviving its collections; the pages it grows into stay
// resident. toy's inference makes few JavaScript objects (activations come from the workspace,
// tensor/workspace.ts), but a decode step's small ones still grew it over a run: SmolLM2 tg64
// peaked 15–20 MB higher for it (docs/internals.md, Performance notes). Keeping it at its
// starting size costs more frequent small collections: SmolLM2 Q4_1 decode, ~100 instead of
// ~18 per 512 steps, ~0.3 ms each, under 1% of the decode's time (measured under load).
// `toy infer` and the benchmark's runs (bench/toyRun.ts) do; training keeps V8's default (its
// tape's objects live through a step: a small young generation would copy them all), and so
// does serve (each request makes objects of its own; not measured with a small one).

import { setFlagsFromString } from "node:v8";

/** Keep V8's young generation at its starting size, for the rest of the process: call before inference starts. */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}
