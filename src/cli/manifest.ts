// `toy --manifest`: the command line as one JSON document. Commands, arguments and flags are
// read from commander's own tree (the same objects `--help` prints), so they cannot drift; exit
// codes and the shapes of `--json` output are the hand-written table below.

import type { Argument, Command, Option } from "commander";
import { EXIT } from "../errors.js";

export const MANIFEST_SCHEMA = "toy-manifest/v1";

export interface ManifestFlag {
  /** As written in --help, e.g. "--max-tokens <n>". */
  flags: string;
  long: string | null;
  short: string | null;
  /** boolean (no value), string, integer, number, integer[], number[], string[]. */
  type: string;
  /** The value is required after the flag (false: optional value, or none for booleans). */
  takes_value: boolean;
  choices: string[] | null;
  default: unknown;
  description: string;
}

export interface ManifestArgument {
  name: string;
  required: boolean;
  variadic: boolean;
  default: unknown;
  choices: string[] | null;
  description: string;
}

export interface ManifestCommand {
  name: string;
  /** How it is invoked, e.g. "toy eval <model> [options]". */
  usage: string;
  description: string;
  arguments: ManifestArgument[];
  flags: ManifestFlag[];
  exit_codes: number[];
  /** The shape of what `--json` prints (null: the command prints no JSON). */
  json: OutputShape | null;
  commands: ManifestCommand[];
}

/**
 * An output shape, written the way TypeScript writes types: a string names a type ("integer",
 * "string | null", "integer[]"), an object lists fields, a one-element array is a list of that
 * shape. `lines: true` means one JSON document per line (a stream of events).
 */
export type Shape = string | Shape[] | { [field: string]: Shape };
export interface OutputShape {
  lines: boolean;
  shape: Shape;
  note?: string;
}

interface CommandInfo {
  exitCodes: number[];
  json: OutputShape | null;
}

const { ok, runtime, usage, badModel, backend } = EXIT;
const MODEL_CODES = [ok, runtime, usage, badModel, backend];

const LOGPROB_POSITION = { next: "integer | null", logprob: "number | null", top: ["[integer, number]"] };

/** Exit codes and JSON shapes, by command path ("train from-scratch" for a subcommand). */
export const COMMAND_INFO: Record<string, CommandInfo> = {
  install: {
    exitCodes: [ok, runtime, backend],
    json: { lines: false, shape: {
      backends: [{ name: "string", available: "boolean", detail: "string" }],
      selftest: [{ kernel: "string", type: "string?", maxError: "number", tolerance: "number", ok: "boolean", error: "string?" }],
    } },
  },
  infer: {
    exitCodes: MODEL_CODES,
    json: { lines: false, shape: {
      prompt_tokens: "integer[]", tokens: "integer[]", text: "string",
      finish_reason: '"stop" | "length" | "aborted"',
      timing: { prompt_tokens_per_s: "number", tokens_per_s: "number" },
      kv_cache: { type: '"f32" | "f16" | "q8_0"', bytes: "integer" },
    } },
  },
  eval: {
    exitCodes: MODEL_CODES,
    json: { lines: false, shape: {
      tokens: "integer[]", positions: [LOGPROB_POSITION], nll: "number", perplexity: "number", tokens_scored: "integer",
    }, note: "positions[i] scores tokens[i+1]; top lists [id, logprob] pairs, most likely first. A vit model with --data prints { images: integer, correct: integer, accuracy: number, loss: number, classes: string[], confusion: integer[][] (rows: true class), data: string } instead" },
  },
  tokenize: {
    exitCodes: [ok, runtime, usage, badModel],
    json: { lines: false, shape: { tokens: "integer[]", pieces: "string[]" } },
  },
  describe: {
    exitCodes: [ok, runtime, usage, badModel],
    json: { lines: false, shape: "ModelConfig", note: "the configuration the model is built from (src/archs/config.ts)" },
  },
  list: {
    exitCodes: [ok, runtime],
    json: { lines: false, shape: [{
      name: "string", source: '"hf" | "ollama" | "lmstudio" | "local"', architecture: "string",
      parameters: "integer", type: "string", size_bytes: "integer", path: "string",
    }] },
  },
  fetch: {
    exitCodes: [ok, runtime, usage],
    json: { lines: false, shape: {
      repo: "string", file: "string", revision: "string", commit: "string?", path: "string",
      size_bytes: "integer", sha256: "string", verified: '"sha256" | "sha1" | "size"',
      resumed_from: "integer", already_present: "boolean",
    } },
  },
  serve: {
    exitCodes: MODEL_CODES,
    json: null,
  },
  new: {
    exitCodes: [ok, runtime, usage],
    json: { lines: false, shape: { name: "string", kind: '"experiment" | "lib"', path: "string", files: "string[]" } },
  },
  train: {
    exitCodes: MODEL_CODES,
    json: { lines: true, shape: "toy/v1 event", note: "one event per line: run_start, step, eval, checkpoint, run_end (docs/events.md)" },
  },
};

/** What a subcommand of a command in the table inherits (train's recipes). */
function infoFor(path: string): CommandInfo {
  const parts = path.split(" ");
  for (let n = parts.length; n > 0; n--) {
    const info = COMMAND_INFO[parts.slice(0, n).join(" ")];
    if (info) return info;
  }
  return { exitCodes: [ok, runtime, usage], json: null };
}

/** The value type of a flag, from its syntax and by asking its parser about sample values. */
function flagType(o: Option): string {
  if (!o.required && !o.optional) return "boolean";
  if (o.argChoices) return "string";
  const parse = o.parseArg as ((value: string, previous: unknown) => unknown) | undefined;
  if (!parse) return o.variadic ? "string[]" : "string";
  const results = ["1", "2", "1024", "4096", "0.5", "1,2", "0.9,0.95"].map((v) => {
    try { return { v, out: parse(v, undefined) }; } catch { return { v, out: undefined }; }
  });
  const outs = results.map((r) => r.out).filter((x) => x !== undefined);
  const lists = outs.every((x) => Array.isArray(x) && x.every((e) => typeof e === "number"));
  if (outs.length > 0 && lists) return outs.flat().every((e) => Number.isInteger(e)) ? "integer[]" : "number[]";
  if (outs.length > 0 && outs.every((x) => typeof x === "number")) {
    return results.find((r) => r.v === "0.5")?.out === 0.5 ? "number" : "integer";
  }
  return "string";
}

function flagOf(o: Option): ManifestFlag {
  return {
    flags: o.flags,
    long: o.long ?? null,
    short: o.short ?? null,
    type: flagType(o),
    takes_value: o.required,
    choices: o.argChoices ? [...o.argChoices] : null,
    default: o.defaultValue ?? null,
    description: o.description,
  };
}

function argumentOf(a: Argument): ManifestArgument {
  return {
    name: a.name(),
    required: a.required,
    variadic: a.variadic,
    default: a.defaultValue ?? null,
    choices: a.argChoices ? [...a.argChoices] : null,
    description: a.description,
  };
}

function commandOf(cmd: Command, parents: string[]): ManifestCommand {
  const path = [...parents, cmd.name()];
  const info = infoFor(path.join(" "));
  return {
    name: path.join(" "),
    usage: ["toy", ...path, cmd.usage()].join(" "),
    description: cmd.description(),
    arguments: cmd.registeredArguments.map(argumentOf),
    // The flags --help prints: the command's own and its -h, --help.
    flags: cmd.createHelp().visibleOptions(cmd).map(flagOf),
    exit_codes: info.exitCodes,
    json: info.json,
    commands: cmd.commands.map((sub) => commandOf(sub, path)),
  };
}

export interface Manifest {
  schema: string;
  name: string;
  version: string;
  description: string;
  /** Flags of `toy` itself (--version, --manifest, --help). */
  flags: ManifestFlag[];
  exit_codes: Record<string, string>;
  environment: Record<string, string>;
  commands: ManifestCommand[];
}

export function buildManifest(program: Command): Manifest {
  return {
    schema: MANIFEST_SCHEMA,
    name: program.name(),
    version: program.version() ?? "",
    description: program.description(),
    flags: program.createHelp().visibleOptions(program).map(flagOf),
    exit_codes: {
      [ok]: "ok",
      [runtime]: "runtime failure",
      [usage]: "usage error: a wrong flag, argument or input",
      [badModel]: "bad or unsupported model file",
      [backend]: "backend unavailable",
    },
    environment: {
      TOY_MODEL: "the default model of infer and serve",
      TOY_FIXTURES: "the shared fixtures folder (default ../shared/fixtures)",
      TOY_THREADS: "threads of the cpu backend",
      TOY_MODELS_PATH: "another folder that list searches and model names resolve in",
      TOY_API_KEY: "the API key serve requires",
      TOY_DEBUG: "print stack traces of runtime failures",
      HF_ENDPOINT: "the Hugging Face hub (fetch)",
      HF_TOKEN: "the Hugging Face token (fetch)",
      HF_HUB_CACHE: "the Hugging Face cache (list; default $HF_HOME/hub, else ~/.cache/huggingface/hub)",
      OLLAMA_MODELS: "Ollama's store (list; default ~/.ollama/models)",
    },
    commands: program.commands.map((cmd) => commandOf(cmd, [])),
  };
}
