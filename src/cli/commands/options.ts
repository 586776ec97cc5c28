// Flags every model-running command accepts.

import { Command, Option } from "commander";
import { int } from "../common.js";

export function backendOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--backend <name>", "compute backend (default: cpu when built, else ts)").choices(["ts", "cpu"]))
    .option("--threads <n>", "threads for the cpu backend (default: $TOY_THREADS or all cores)", int("--threads", 1));
}
