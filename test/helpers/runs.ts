// Reading run bundles in tests: their events, step losses, and the one run a folder holds.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { toy } from "./cli.js";

export type Event = Record<string, any>;
export const events = (dir: string): Event[] => readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
export const losses = (dir: string) => events(dir).filter((e) => e.event === "step").map((e) => [e.step, e.loss]);
export const runDir = (out: string) => { const ids = readdirSync(out); assert.equal(ids.length, 1, `one run in ${out}`); return join(out, ids[0]); };

/** `toy train ARGS --out OUT` (asserting success): the folder of the run it made. */
export function trainRun(args: string[], out: string, env: Record<string, string> = {}): string {
  const r = toy(["train", ...args, "--out", out], { env });
  assert.equal(r.status, 0, r.stderr);
  return runDir(out);
}
