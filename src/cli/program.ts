// The command tree of `toy`.

import { Command, CommanderError } from "commander";
import { readFileSync } from "node:fs";
import { describeCommand } from "./commands/describe.js";
import { evalCommand } from "./commands/eval.js";
import { fetchCommand } from "./commands/fetch.js";
import { inferCommand } from "./commands/infer.js";
import { installCommand } from "./commands/install.js";
import { listCommand } from "./commands/list.js";
import { newCommand } from "./commands/new.js";
import { serveCommand } from "./commands/serve.js";
import { tokenizeCommand } from "./commands/tokenize.js";
import { trainCommand } from "./commands/train.js";
import { buildManifest } from "./manifest.js";

export function toyVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

export function buildProgram(): Command {
  const program = new Command("toy")
    .description("readable machine learning in TypeScript: run, evaluate, train and serve GGUF models")
    .version(toyVersion())
    .option("--manifest", "print every command, flag, default, exit code and JSON output shape as one JSON document")
    .showHelpAfterError()
    .exitOverride()
    .on("option:manifest", () => {
      process.stdout.write(JSON.stringify(buildManifest(program), null, 2) + "\n");
      throw new CommanderError(0, "toy.manifest", "");
    });
  for (const cmd of [installCommand(), inferCommand(), evalCommand(), tokenizeCommand(), describeCommand(), listCommand(), fetchCommand(), serveCommand(), newCommand(), trainCommand()]) {
    cmd.exitOverride().showHelpAfterError();
    program.addCommand(cmd);
  }
  return program;
}
