#!/usr/bin/env node
// The `toy` command. Exit codes: 0 ok, 1 runtime failure, 2 usage error, 3 bad or unsupported
// model file, 4 backend unavailable.

import { Command, CommanderError } from "commander";
import { EXIT, ToyError } from "../errors.js";
import { buildProgram } from "./program.js";

function fail(message: string, code: number): never {
  process.stderr.write(`toy: ${message}\n`);
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  const program: Command = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.exitCode === 0) process.exit(0);
      process.exit(EXIT.usage); // commander has already printed the message
    }
    if (e instanceof ToyError) fail(e.message, e.exitCode);
    if (e instanceof RangeError && /token id|outside/.test(e.message)) fail(e.message, EXIT.usage);
    fail(e instanceof Error ? (process.env.TOY_DEBUG ? e.stack ?? e.message : e.message) : String(e), EXIT.runtime);
  }
}

// A closed pipe (toy infer ... | head) ends quietly.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(0);
});

await main(process.argv);
