// The command tree of `toy`.

import { Command } from "commander";
import { readFileSync } from "node:fs";
import { describeCommand } from "./commands/describe.js";
import { evalCommand } from "./commands/eval.js";
import { fetchCommand } from "./commands/fetch.js";
import { inferCommand } from "./commands/infer.js";
import { installCommand } from "./commands/install.js";
import { listCommand } from "./commands/list.js";
import { serveCommand } from "./commands/serve.js";
import { tokenizeCommand } from "./commands/tokenize.js";

export function toyVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

export function buildProgram(): Command {
  const program = new Command("toy")
    .description("readable machine learning in TypeScript: run, evaluate, train and serve GGUF models")
    .version(toyVersion())
    .showHelpAfterError()
    .exitOverride();
  for (const cmd of [installCommand(), inferCommand(), evalCommand(), tokenizeCommand(), describeCommand(), listCommand(), fetchCommand(), serveCommand()]) {
    cmd.exitOverride().showHelpAfterError();
    program.addCommand(cmd);
  }
  return program;
}
