// toy new: start a project on toy. An experiment (a script whose hyperparameters come from
// environment variables, a README, a test) or, with --lib, a library that adds its own
// architecture through toy's public API. Both depend on this toy checkout by a "file:" link, so
// they install and test offline.

import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { UsageError } from "../../errors.js";
import { scaffoldFiles, type ScaffoldKind } from "../../scaffold/index.js";
import { printJson } from "../common.js";

interface NewFlags {
  lib?: boolean;
  dir: string;
  json?: boolean;
}

/** The toy checkout this command runs from (dist/src/cli/commands → the root). */
export const TOY_ROOT = fileURLToPath(new URL("../../../../", import.meta.url)).replace(/\/$/, "");

const NAME = /^[a-z0-9][a-z0-9._-]*$/;

export function newCommand(): Command {
  return new Command("new")
    .description("create a project on toy: an experiment (env-var hyperparameters, README, test) or, with --lib, a library adding its own architecture")
    .argument("<name>", "the project's package name and folder (lowercase letters, digits, . _ -)")
    .option("--lib", "a library that adds an architecture through toy's API, with tests")
    .option("--dir <dir>", "the folder to create the project in", ".")
    .option("--json", "print {name, kind, path, files}")
    .action((name: string, flags: NewFlags) => {
      if (!NAME.test(name) || name.length > 214) throw new UsageError(`${name}: not a valid package name (lowercase letters, digits, ".", "_", "-"; starting with a letter or digit)`);
      const kind: ScaffoldKind = flags.lib ? "lib" : "experiment";
      const path = resolve(flags.dir, name);
      if (existsSync(path) && readdirSync(path).length > 0) throw new UsageError(`${path} already exists and is not empty`);
      const files = scaffoldFiles(kind, { name, toyPath: TOY_ROOT });
      for (const [rel, text] of Object.entries(files)) {
        const file = join(path, rel);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, text);
      }
      if (flags.json) {
        printJson({ name, kind, path, files: Object.keys(files).sort() });
        return;
      }
      process.stdout.write(`created ${kind === "lib" ? "library" : "experiment"} ${name} in ${path}\n`);
      process.stdout.write(`  cd ${path} && npm install && npm test\n`);
    });
}
