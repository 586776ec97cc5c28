// The projects `toy new` writes: their files, by relative path, for a name and a toy checkout.

import { EXPERIMENT, EXPERIMENT_README, EXPERIMENT_TEST, SAMPLE_TEXT } from "./experiment.js";
import { LIB_INDEX, LIB_README, LIB_TEST } from "./lib.js";
import { GITIGNORE, NPMRC, TINY_MODEL } from "./shared.js";

export type ScaffoldKind = "experiment" | "lib";

export interface ScaffoldVars {
  /** The package name (also the folder name). */
  name: string;
  /** The absolute path of the toy checkout the project depends on ("file:" dependency). */
  toyPath: string;
}

function fill(template: string, v: ScaffoldVars): string {
  return template.replaceAll("{{name}}", v.name).replaceAll("{{toyPath}}", v.toyPath);
}

function packageJson(kind: ScaffoldKind, v: ScaffoldVars): string {
  const pkg = kind === "experiment"
    ? {
      name: v.name, version: "0.1.0", private: true, type: "module",
      description: "An experiment on toy: hyperparameters from environment variables, one JSON result per run",
      scripts: { start: "node experiment.mjs", test: "node --test test/experiment.test.mjs" },
      dependencies: { toy: `file:${v.toyPath}` },
      engines: { node: ">=20" },
    }
    : {
      name: v.name, version: "0.1.0", type: "module",
      description: "A parallel-residual decoder architecture for toy",
      exports: { ".": "./index.mjs" },
      files: ["index.mjs"],
      scripts: { test: "node --test test/parallel.test.mjs" },
      peerDependencies: { toy: "*" },
      devDependencies: { toy: `file:${v.toyPath}` },
      engines: { node: ">=20" },
    };
  return JSON.stringify(pkg, null, 2) + "\n";
}

export function scaffoldFiles(kind: ScaffoldKind, v: ScaffoldVars): Record<string, string> {
  const common = {
    "package.json": packageJson(kind, v),
    ".npmrc": NPMRC,
    ".gitignore": GITIGNORE,
    "test/tiny-model.mjs": TINY_MODEL,
  };
  const own: Record<string, string> = kind === "experiment"
    ? { "experiment.mjs": EXPERIMENT, "README.md": EXPERIMENT_README, "test/experiment.test.mjs": EXPERIMENT_TEST, "data/sample.txt": SAMPLE_TEXT }
    : { "index.mjs": LIB_INDEX, "README.md": LIB_README, "test/parallel.test.mjs": LIB_TEST };
  return Object.fromEntries(Object.entries({ ...common, ...own }).map(([path, text]) => [path, fill(text, v)]));
}
