// Where the shared reference fixtures live: $TOY_FIXTURES, else ../shared/fixtures beside the
// project. Conformance tests call `fixtures()` and skip, loudly, when it is absent.

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export function fixturesDir(): string | undefined {
  const dir = process.env.TOY_FIXTURES ?? join(projectRoot, "..", "shared", "fixtures");
  return existsSync(dir) ? dir : undefined;
}

/** The fixtures folder, or a skip reason to hand to node:test's `skip` option. */
export function fixtures(): { dir: string; skip: false } | { dir: ""; skip: string } {
  const dir = fixturesDir();
  if (dir) return { dir, skip: false };
  const msg = "SKIPPED: reference fixtures not found (set TOY_FIXTURES or place ../shared/fixtures)";
  console.warn(msg);
  return { dir: "", skip: msg };
}

export function sharedDataDir(): string | undefined {
  const f = fixturesDir();
  const dir = f ? join(f, "..", "data") : undefined;
  return dir && existsSync(dir) ? dir : undefined;
}

export { projectRoot };

/** A data set folder under ../shared/data (beside the fixtures), or a skip reason, printed, when it is absent. */
export function sharedData(name: string): { dir: string; skip: false } | { dir: ""; skip: string } {
  const base = sharedDataDir();
  const dir = base ? join(base, name) : undefined;
  if (dir && existsSync(dir)) return { dir, skip: false };
  const msg = `SKIPPED: shared data ${name} not found (set TOY_FIXTURES so that its ../data/${name} exists, or place ../shared/data/${name})`;
  console.warn(msg);
  return { dir: "", skip: msg };
}
