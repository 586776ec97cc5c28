// toy serve: the OpenAI HTTP API (and a chat page) over one model. docs/serve.md has the details.

import { basename } from "node:path";
import { Command } from "commander";
import { prepareBackend } from "../../backends/index.js";
import { UsageError } from "../../errors.js";
import { DEFAULT_BATCH_TOKENS } from "../../serve/scheduler.js";
import { createServer } from "../../serve/server.js";
import { float, int, openModel } from "../common.js";
import { defaultModelPath } from "../../io/discovery/modelNames.js";
import { toyVersion } from "../program.js";
import { backendOptions, cacheTypeOption } from "./options.js";

export interface ServeFlags {
  port: number;
  host: string;
  name?: string;
  apiKey?: string;
  parallel: number;
  queue: number;
  ctx?: number;
  bodyLimit: number;
  batchTokens: number;
  drainTimeout: number;
  backend?: string;
  threads?: number;
  serveWeights?: boolean;
}

/** The context per slot when --ctx is not given: the model's own, up to this. */
const DEFAULT_MAX_CTX = 4096;

export function serveCommand(): Command {
  const cmd = new Command("serve")
    .description("serve the OpenAI API (/v1/chat/completions, /v1/completions, /v1/models) and a chat page at /")
    .argument("[model]", "a GGUF model file (default: $TOY_MODEL, else SmolLM2-135M-Instruct from the fixtures)")
    .option("--port <n>", "TCP port (0: any free port)", int("--port", 0), 4567)
    .option("--host <addr>", "address to listen on (other than 127.0.0.1 exposes the server to the network)", "127.0.0.1")
    .option("--name <name>", "the model id clients ask for (default: the file name without .gguf)")
    .option("--api-key <key>", "require \"Authorization: Bearer KEY\" on all but /, /health, /ready and /metrics (default: $TOY_API_KEY, else none)")
    .option("--parallel <n>", "requests generating at once, each with its own KV cache", int("--parallel", 1), 4)
    .option("--queue <n>", "requests that may wait for a slot; more get 503", int("--queue", 0), 64)
    .option("--ctx <n>", `context (KV cache positions) per slot (default: the model's, at most ${DEFAULT_MAX_CTX})`, int("--ctx", 1))
    .option("--body-limit <bytes>", "largest request body; larger ones get 413", int("--body-limit", 1024), 1 << 20)
    .option("--batch-tokens <n>", "rows per batched forward: one per generating request, the rest read prompts", int("--batch-tokens", 1), DEFAULT_BATCH_TOKENS)
    .option("--serve-weights", "send the model file at /v1/models/{id}/gguf, so that the chat page can run it in the browser (WebGPU)")
    .option("--drain-timeout <seconds>", "on SIGTERM: refuse new requests, let running ones finish for at most this long, then exit 0", float("--drain-timeout", 0), 30);
  backendOptions(cmd);
  cacheTypeOption(cmd);
  return cmd.action((modelPath: string | undefined, flags: ServeFlags) => runServe(modelPath ?? defaultModelPath(), flags));
}

async function runServe(modelPath: string, flags: ServeFlags): Promise<void> {
  await prepareBackend(flags.backend);
  const opened = openModel(modelPath, flags);
  const { model, tokenizer } = opened;
  if (flags.port > 65535) throw new UsageError(`--port must be at most 65535, got ${flags.port}`);
  if (flags.ctx !== undefined && flags.ctx > model.contextLength) {
    throw new UsageError(`--ctx ${flags.ctx} is longer than the model's context (${model.contextLength} tokens)`);
  }
  const name = flags.name ?? basename(opened.path).replace(/\.gguf$/i, "");
  const server = createServer(model, tokenizer, {
    name,
    apiKey: flags.apiKey ?? (process.env.TOY_API_KEY || undefined),
    parallel: flags.parallel,
    queueSize: flags.queue,
    contextSize: flags.ctx ?? Math.min(model.contextLength, DEFAULT_MAX_CTX),
    bodyLimit: flags.bodyLimit,
    batchTokens: flags.batchTokens,
    fingerprint: `toy-${toyVersion()}-${model.device}`,
    weightsPath: flags.serveWeights ? opened.path : undefined,
  });
  if (server.template.isFallback) process.stderr.write("toy: the model has no chat template; chat uses ChatML\n");
  // Before listening: the first request must not pay for paging in the weights.
  const t0 = performance.now();
  await server.warmUp();
  const warmMs = performance.now() - t0;
  let address: string;
  try {
    address = await server.app.listen({ port: flags.port, host: flags.host });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new UsageError(`cannot listen on ${flags.host}:${flags.port}${code ? ` (${code})` : ""}: ${(e as Error).message}`);
  }
  process.stderr.write(`toy: serving ${name} on ${address} (${model.device} backend, ${flags.parallel} slots, warmed up in ${warmMs.toFixed(0)} ms)\n`);
  await new Promise<void>((resolve) => {
    // SIGTERM drains (a load balancer or orchestrator stopping a replica); SIGINT (Ctrl-C), or a
    // second signal, stops at once.
    let stopping = false;
    const now = () => {
      process.off("SIGINT", now);
      process.off("SIGTERM", drain);
      void server.close().then(resolve);
    };
    const drain = () => {
      if (stopping) return now();
      stopping = true;
      process.stderr.write(`toy: draining (new requests get 503; at most ${flags.drainTimeout} s for the running ones)\n`);
      void server.drain(flags.drainTimeout * 1000).then((cut) => {
        process.stderr.write(cut > 0 ? `toy: drain timed out; requests cut off: ${cut}\n` : "toy: drained\n");
        resolve();
      });
    };
    process.on("SIGINT", now);
    process.on("SIGTERM", drain);
  });
}
