// Flags every model-running command accepts.

import { Command, Option } from "commander";
import { CLI_DEFAULT_KV_TYPE, KV_TYPES } from "../../blocks/kvCacheTypes.js";
import { int } from "../common.js";

export function backendOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--backend <name>", "compute backend (default: cpu when built, else ts; webgpu: infer, eval and serve)").choices(["ts", "cpu", "webgpu"]))
    .option("--threads <n>", "threads for the cpu backend (default: $TOY_THREADS or all cores)", int("--threads", 1));
}

/** The KV cache's storage type, for the commands that decode or score text. */
export function cacheTypeOption(cmd: Command): Command {
  return cmd.addOption(new Option("--cache-type <type>", "how the KV cache stores keys and values (as llama.cpp's --cache-type-k/v)")
    .choices([...KV_TYPES]).default(CLI_DEFAULT_KV_TYPE));
}
