// `toy serve`: the OpenAI HTTP API over one model, as the official `openai` client uses it.
//
//   GET  /v1/models               the one model served
//   POST /v1/chat/completions     messages → the model's chat template → an answer
//   POST /v1/completions          a prompt (text or token ids) → its continuation
//   GET  /health                  liveness: {"status": "ok", slots, queue}
//   GET  /ready                   readiness: 200 once warmed up, 503 while draining
//   GET  /metrics                 Prometheus text format (metrics.ts)
//   GET  /                        a small chat page
//
// Requests run on the Scheduler (slots with their own KV caches, a bounded queue); this file
// only turns HTTP into jobs and jobs back into JSON or server-sent events.

import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { ServerResponse } from "node:http";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { LanguageModel } from "../archs/model.js";
import { formatGbnf, GrammarConstraint, tokenGrammar } from "../engines/grammar/index.js";
import { vocabTrie } from "../engines/grammar/tokenMask.js";
import { UsageError } from "../errors.js";
import { chatTemplateFor, parseMessages, type ChatTemplate } from "../io/chat/template.js";
import type { Tokenizer } from "../io/tokenizer/index.js";
import { ApiError, fromFrameworkError, invalid, notFound } from "./errors.js";
import { serveMetrics, type ServeMetrics } from "./metrics.js";
import { registerBrowserRoutes, OPEN_BROWSER_ROUTES } from "./browserRoutes.js";
import { chatPage } from "./page.js";
import { chatSchema, completionSchema, settingsFrom, toolRequest, type ChatBody, type CompletionBody, type GenerationSettings } from "./request.js";
import { Scheduler, type JobResult } from "./scheduler.js";
import { trace } from "./trace.js";
import { TextStream, type TextPiece, type TokenLogprob } from "./textStream.js";
import { renderInputs, toolCallGbnf, ToolCallParser, toolFamily, type ToolCall, type ToolOutput, type ToolSetup } from "./tools.js";

export interface ServeOptions {
  /** The model id clients name (default: the file name without .gguf). */
  name: string;
  /** When set, /v1/* needs "Authorization: Bearer KEY". */
  apiKey?: string;
  parallel: number;
  queueSize: number;
  contextSize: number;
  /** Largest request body in bytes (larger: 413). */
  bodyLimit: number;
  /** Reported as system_fingerprint. */
  fingerprint: string;
  /** Rows per batched forward (scheduler.ts). */
  batchTokens?: number;
  /** The GGUF sent at /v1/models/{id}/gguf for the page's in-browser mode (toy serve --serve-weights). */
  weightsPath?: string;
}

type Kind = "chat" | "completion";

export interface ToyServer {
  app: FastifyInstance;
  scheduler: Scheduler;
  template: ChatTemplate;
  metrics: ServeMetrics;
  /** Run the model once before the first request (see Scheduler.warmUp); /ready answers 200 after it. */
  warmUp(): Promise<void>;
  /**
   * Stop taking requests (503, /ready 503) and let those running finish, for at most
   * `timeoutMs`; then close. Resolves with the number of requests cut off by the timeout.
   */
  drain(timeoutMs: number): Promise<number>;
  /** End everything now: running generations are aborted, connections closed. */
  close(): Promise<void>;
}

export function createServer(model: LanguageModel, tokenizer: Tokenizer, opts: ServeOptions): ToyServer {
  const template = chatTemplateFor(model.file.metadata, tokenizer);
  /** Connections and requests taken in, and the count the scheduler saw last (Scheduler's `arriving`). */
  let arrivals = 0, arrivalsSeen = 0;
  const scheduler = new Scheduler(model, {
    parallel: opts.parallel, queueSize: opts.queueSize, contextSize: opts.contextSize, batchTokens: opts.batchTokens,
    arriving: () => {
      const changed = arrivals !== arrivalsSeen;
      arrivalsSeen = arrivals;
      return changed;
    },
  });
  const metrics = serveMetrics(scheduler, opts.name);
  let warm = false;
  /** Generation requests whose response has not ended (a drain waits for them). */
  let inFlight = 0;
  const inFlightWaiters: (() => void)[] = [];
  const created = Math.floor(Date.now() / 1000);
  const tokenText = tokenTexts(tokenizer);
  vocabTrie(tokenizer); // built now (~0.5 s for 50k tokens), not on the first structured request

  const app = Fastify({
    bodyLimit: opts.bodyLimit,
    forceCloseConnections: true,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
  });

  app.server.on("connection", () => { arrivals++; trace("connection"); });

  app.setErrorHandler((e, _req, reply) => {
    const err = fromFrameworkError(e);
    void reply.status(err.status).send(err.body());
  });
  app.setNotFoundHandler((req, reply) => {
    const err = notFound(`no route ${req.method} ${req.url.split("?")[0]}`, null, "unknown_url");
    void reply.status(404).send(err.body());
  });

  // Every response is counted by route and status when it ends (streams too, and clients that left).
  app.addHook("onRequest", async (req, reply) => {
    const route = req.routeOptions.url ?? "unknown";
    const generating = req.method === "POST" && route.startsWith("/v1/");
    if (generating) inFlight++;
    arrivals++;
    trace("request", req.id);
    reply.raw.once("close", () => {
      metrics.request(route, reply.raw.statusCode);
      if (generating && --inFlight === 0) for (const w of inFlightWaiters.splice(0)) w();
    });
  });

  if (opts.apiKey !== undefined) {
    const want = createHash("sha256").update(`Bearer ${opts.apiKey}`).digest();
    // Everything but the page and /health needs the key (decided by the route matched, not by
    // the raw URL, so no spelling of a path slips past).
    const open = new Set(["/", "/health", "/ready", "/metrics", ...OPEN_BROWSER_ROUTES]);
    app.addHook("onRequest", async (req) => {
      if (req.routeOptions.url !== undefined && open.has(req.routeOptions.url)) return;
      const got = createHash("sha256").update(req.headers.authorization ?? "").digest();
      if (!timingSafeEqual(want, got)) {
        throw new ApiError(401, req.headers.authorization ? "incorrect API key provided" : "missing API key: send \"Authorization: Bearer KEY\"", "authentication_error", null, "invalid_api_key");
      }
    });
  }

  const modelCard = () => ({
    id: opts.name, object: "model", created, owned_by: "toy",
    meta: { arch: model.arch, n_vocab: model.nVocab, n_ctx: opts.contextSize, n_ctx_train: model.contextLength, chat_template: template.isFallback ? "fallback (ChatML)" : "gguf" },
  });

  const checkModel = (name: string) => {
    if (name !== opts.name) throw notFound(`the model "${name}" does not exist; this server serves "${opts.name}"`, "model", "model_not_found");
  };

  app.get("/", async (_req, reply) => reply.type("text/html; charset=utf-8").send(chatPage(opts.name, { inBrowser: opts.weightsPath !== undefined })));
  registerBrowserRoutes(app, { name: opts.name, weightsPath: opts.weightsPath });
  app.get("/health", async () => ({ status: "ok", model: opts.name, ...scheduler.stats() }));
  app.get("/ready", async (_req, reply) => {
    const status = scheduler.isDraining ? "draining" : warm ? "ready" : "warming up";
    return reply.status(status === "ready" ? 200 : 503).send({ status, model: opts.name });
  });
  app.get("/metrics", async (_req, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  app.get("/v1/models", async () => ({ object: "list", data: [modelCard()] }));
  app.get<{ Params: { model: string } }>("/v1/models/:model", async (req) => {
    checkModel(req.params.model);
    return modelCard();
  });

  app.post<{ Body: ChatBody }>("/v1/chat/completions", { schema: { body: chatSchema } }, async (req, reply) => {
    const body = req.body;
    trace("handler", req.id);
    checkModel(body.model);
    if (body.top_logprobs != null && body.logprobs !== true) throw invalid("top_logprobs needs logprobs: true", "top_logprobs");
    const settings = settingsFrom(body, body.logprobs === true ? body.top_logprobs ?? 0 : undefined, model.nVocab);
    const offered = toolRequest(body);
    const tools: ToolSetup | undefined = offered && { ...offered, family: toolFamily(template) };
    const calling = tools !== undefined && tools.choice !== "none";
    if (calling && settings.format) {
      throw invalid("response_format / grammar cannot be combined with tools (use tool_choice \"none\", or leave them out)", settings.formatParam ?? null);
    }
    let prompt: number[];
    try {
      const inputs = renderInputs(parseMessages(body.messages, "messages"), tools, template);
      prompt = template.encode(inputs.messages, true, inputs.tools);
    } catch (e) {
      if (e instanceof UsageError) throw invalid(e.message, "messages");
      throw e;
    }
    // A required or named call: decoding follows the grammar of a valid call.
    if (calling && tools.choice !== "auto") {
      try {
        settings.format = { gbnf: toolCallGbnf(tools) };
      } catch (e) {
        if (e instanceof UsageError) throw invalid(e.message, "tools");
        throw e;
      }
      settings.formatParam = "tools";
    }
    return run("chat", req, reply, prompt, settings, settings.ignoreEos ? new Set() : template.stopIds(), calling ? tools : undefined);
  });

  app.post<{ Body: CompletionBody }>("/v1/completions", { schema: { body: completionSchema } }, async (req, reply) => {
    const body = req.body;
    trace("handler", req.id);
    checkModel(body.model);
    const p = body.prompt;
    const prompt = typeof p === "string" ? tokenizer.encode(p)
      : typeof p[0] === "string" ? tokenizer.encode(p[0])
      : Array.isArray(p[0]) ? [...p[0]] : [...(p as number[])];
    const bad = prompt.find((id) => id >= model.nVocab);
    if (bad !== undefined) throw invalid(`token id ${bad} is outside the vocabulary (0..${model.nVocab - 1})`, "prompt");
    const settings = settingsFrom(body, body.logprobs ?? undefined, model.nVocab);
    if (body.best_of != null && body.best_of !== settings.n) throw invalid("best_of is supported only equal to n (every choice is returned; none is ranked)", "best_of");
    if (body.echo && settings.topLogprobs !== undefined) throw invalid("echo together with logprobs is not supported (prompt tokens are not scored)", "echo");
    const echo = body.echo ? (typeof p === "string" ? p : typeof p[0] === "string" ? p[0] : tokenizer.decode(prompt)) : "";
    return run("completion", req, reply, prompt, settings, settings.ignoreEos ? new Set() : tokenizer.stopIds, undefined, echo);
  });

  /** The grammar constraint for one choice (the compiled grammar and its masks are shared). */
  function constraintFor(settings: GenerationSettings, stopIds: ReadonlySet<number>): GrammarConstraint | undefined {
    if (!settings.format) return undefined;
    try {
      return new GrammarConstraint(tokenGrammar(formatGbnf(settings.format, settings.formatParam), tokenizer), stopIds);
    } catch (e) {
      if (e instanceof UsageError) throw invalid(e.message, settings.formatParam ?? null);
      throw e;
    }
  }

  /**
   * One request's generations (n choices, each its own job with seed + index), answered as one
   * JSON object or as a stream of events. Each choice's tokens go through its TextStream (UTF-8,
   * stop sequences) and, when tools are offered, its ToolCallParser (content vs. calls).
   */
  async function run(kind: Kind, req: FastifyRequest, reply: FastifyReply, prompt: number[], settings: GenerationSettings, stopIds: ReadonlySet<number>, tools?: ToolSetup, echo = "") {
    const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${randomUUID().replaceAll("-", "")}`;
    const head = { id, object: kind === "chat" ? "chat.completion.chunk" : "text_completion", created: Math.floor(Date.now() / 1000), model: opts.name, system_fingerprint: opts.fingerprint };
    const abort = new AbortController();
    // The socket closed before the answer was finished: stop generating, free the slots.
    reply.raw.on("close", () => { if (!reply.raw.writableFinished) abort.abort(); });
    let sse: ServerResponse | undefined;
    const arrived = performance.now();

    if (prompt.length > opts.contextSize) {
      throw invalid(`the prompt (${prompt.length} tokens) is longer than the context (${opts.contextSize} tokens)`, kind === "chat" ? "messages" : "prompt", "context_length_exceeded");
    }

    interface Choice {
      index: number;
      text: TextStream;
      tools?: ToolCallParser;
      content: string;
      calls: ToolCall[];
      logprobs: TokenLogprob[];
      done?: Promise<JobResult>;
      /** When its last token came (0: none yet), for the latency metrics. */
      lastToken: number;
    }
    const choices: Choice[] = Array.from({ length: settings.n }, (_, index) => ({
      index, content: "", calls: [], logprobs: [], lastToken: 0,
      // Tool calls may be written with control tokens ([TOOL_CALLS], <|python_tag|>): read them as text.
      text: new TextStream(tokenizer, settings.stop, tools !== undefined),
      tools: tools && new ToolCallParser(tools.family, tools.choice !== "auto"),
    }));

    const send = (c: Choice, delta: Record<string, unknown>, lps: TokenLogprob[], finish: string | null, extra: Record<string, unknown> = {}) => {
      if (sse!.destroyed || sse!.writableEnded) return; // the client has gone; the jobs end next tick
      // Log-probabilities go with text (the role chunk, tool-call chunks and the last chunk have none).
      const lp = settings.topLogprobs !== undefined && (lps.length > 0 || ("content" in delta && !("role" in delta))) ? formatLogprobs(kind, lps, tokenText) : null;
      const choice = kind === "chat"
        ? { index: c.index, delta, logprobs: lp, finish_reason: finish }
        : { index: c.index, text: (delta.content as string | undefined) ?? "", logprobs: lp, finish_reason: finish };
      sse!.write(`data: ${JSON.stringify({ ...head, choices: [choice], ...extra })}\n\n`);
    };

    /** Text released by a choice's TextStream: content and finished calls, sent or kept. */
    const deliver = (c: Choice, piece: TextPiece, final: boolean) => {
      const out: ToolOutput = c.tools ? (final ? mergeOutputs(c.tools.push(piece.text), c.tools.end()) : c.tools.push(piece.text)) : { content: piece.text, calls: [] };
      if (!sse) {
        c.content += out.content;
        c.calls.push(...out.calls);
        c.logprobs.push(...piece.logprobs);
        return;
      }
      if (out.content !== "" || piece.logprobs.length > 0) send(c, { content: out.content }, piece.logprobs, null);
      for (const call of out.calls) {
        // As OpenAI streams a call: its id and name first, then the arguments.
        const k = c.calls.length;
        c.calls.push(call);
        send(c, { tool_calls: [{ index: k, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }, [], null);
        send(c, { tool_calls: [{ index: k, function: { arguments: call.function.arguments } }] }, [], null);
      }
    };

    const finishReason = (c: Choice, r: JobResult): "stop" | "length" | "tool_calls" =>
      c.calls.length > 0 ? "tool_calls" : c.text.stopped || r.finishReason === "stop" ? "stop" : "length";

    try {
      for (const c of choices) {
        c.done = scheduler.submit({
          prompt, maxTokens: settings.maxTokens, sampling: { ...settings.sampling, seed: (settings.sampling.seed + c.index) >>> 0 },
          stopIds, topLogprobs: settings.topLogprobs, signal: abort.signal, constraint: constraintFor(settings, stopIds),
          onToken: (tok, lp) => {
            const now = performance.now();
            if (c.lastToken === 0) { metrics.firstToken((now - arrived) / 1000); trace("first", req.id); }
            else metrics.nextToken((now - c.lastToken) / 1000);
            c.lastToken = now;
            const piece = c.text.push(tok, lp);
            if (piece.text !== "" || piece.logprobs.length > 0) deliver(c, piece, false);
            if (c.text.stopped) return false;
          },
        }); // throws 503 / 400 here, before anything is sent
        trace("submitted", req.id);
        c.done.then((r) => metrics.generation(r.promptTokens, r.cachedTokens, r.sharedTokens, r.tokens.length, r.finishReason), () => {});
      }
    } catch (e) {
      abort.abort(); // the choices already queued
      throw e;
    }

    /** A choice has ended: what is left of its text, and the chunk with its finish_reason. */
    const settle = (c: Choice, r: JobResult) => {
      deliver(c, c.text.end(), true);
      if (sse) send(c, {}, [], finishReason(c, r), c.index === 0 ? { timings: timings([r]) } : {});
    };

    if (settings.stream) {
      reply.hijack();
      sse = reply.raw;
      sse.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
      for (const c of choices) {
        if (kind === "chat") send(c, { role: "assistant", content: "" }, [], null);
        if (echo) send(c, { content: echo }, [], null);
      }
      let results: JobResult[];
      try {
        results = await Promise.all(choices.map((c) => c.done!.then((r) => {
          if (r.finishReason !== "aborted" && !sse!.writableEnded) settle(c, r);
          return r;
        })));
      } catch (e) {
        abort.abort();
        if (!sse.writableEnded) sse.end(`data: ${JSON.stringify(fromFrameworkError(e).body())}\n\ndata: [DONE]\n\n`);
        return;
      }
      if (results.some((r) => r.finishReason === "aborted") || sse.writableEnded) { sse.end(); return; }
      if (settings.includeUsage) sse.write(`data: ${JSON.stringify({ ...head, choices: [], usage: usage(results) })}\n\n`);
      sse.end("data: [DONE]\n\n");
      return;
    }

    let results: JobResult[];
    try {
      results = await Promise.all(choices.map((c) => c.done!));
    } catch (e) {
      abort.abort();
      throw e;
    }
    if (results.some((r) => r.finishReason === "aborted")) return reply.hijack(); // nobody to answer
    const out = choices.map((c, i) => {
      settle(c, results[i]);
      const lp = settings.topLogprobs !== undefined ? formatLogprobs(kind, c.logprobs, tokenText) : null;
      const finish = finishReason(c, results[i]);
      if (kind === "completion") return { index: c.index, text: echo + c.content, logprobs: lp, finish_reason: finish };
      const message = c.calls.length > 0
        ? { role: "assistant", content: c.content === "" ? null : c.content, tool_calls: c.calls, refusal: null }
        : { role: "assistant", content: c.content, refusal: null };
      return { index: c.index, message, logprobs: lp, finish_reason: finish };
    });
    return {
      ...head, object: kind === "chat" ? "chat.completion" : "text_completion",
      choices: out, usage: usage(results), timings: timings(results),
    };
  }

  const close = async () => {
    scheduler.close();
    await app.close();
  };
  return {
    app, scheduler, template, metrics, close,
    async warmUp() {
      await scheduler.warmUp(tokenizer.bos ?? 0);
      // The first chat request also compiles the template and the tokenizer's paths.
      try {
        const ids = template.encode(parseMessages([{ role: "user", content: "Hi!" }], "messages"));
        new TextStream(tokenizer, []).push(ids[ids.length - 1]);
      } catch {
        // a template that refuses this conversation: the first request compiles it
      }
      warm = true;
    },
    async drain(timeoutMs) {
      const finished = scheduler.drain().then(() => inFlight === 0 ? undefined : new Promise<void>((r) => inFlightWaiters.push(r)));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        finished.then(() => false),
        new Promise<boolean>((r) => { timer = setTimeout(() => r(true), timeoutMs); }),
      ]);
      clearTimeout(timer);
      const cut = timedOut ? scheduler.stats().slots_busy + scheduler.stats().queued : 0;
      await close();
      return cut;
    },
  };
}

function mergeOutputs(a: ToolOutput, b: ToolOutput): ToolOutput {
  return { content: a.content + b.content, calls: [...a.calls, ...b.calls] };
}

/** Token counts over all choices (the prompt counted once, as OpenAI does). */
function usage(rs: JobResult[]) {
  const completion = rs.reduce((n, r) => n + r.tokens.length, 0);
  return {
    prompt_tokens: rs[0].promptTokens, completion_tokens: completion, total_tokens: rs[0].promptTokens + completion,
    prompt_tokens_details: { cached_tokens: rs[0].cachedTokens },
  };
}

/** llama.cpp's extension: how long the prompt and the answer took (the first choice's prompt; all choices' tokens). */
function timings(rs: JobResult[]) {
  const predicted = rs.reduce((n, r) => n + r.tokens.length, 0);
  const ms = Math.max(...rs.map((r) => r.generateMs));
  return {
    prompt_n: rs[0].promptTokens - rs[0].cachedTokens, prompt_ms: rs[0].promptMs,
    predicted_n: predicted, predicted_ms: ms,
    predicted_per_second: ms > 0 ? predicted / (ms / 1000) : 0,
  };
}

/** Each token's own text (as streamed: pieces joined verbatim), remembered per id. */
function tokenTexts(tokenizer: Tokenizer): (id: number) => string {
  const memo = new Map<number, string>();
  return (id) => {
    let t = memo.get(id);
    if (t === undefined) {
      const d = tokenizer.streamDecoder();
      t = d.push(id) + d.flush();
      memo.set(id, t);
    }
    return t;
  };
}

const utf8 = new TextEncoder();

/** Log-probabilities as each endpoint spells them. */
function formatLogprobs(kind: Kind, lps: TokenLogprob[], text: (id: number) => string) {
  if (kind === "chat") {
    const entry = (id: number, logprob: number) => ({ token: text(id), logprob, bytes: [...utf8.encode(text(id))] });
    return { content: lps.map((l) => ({ ...entry(l.id, l.logprob), top_logprobs: l.top.map((t) => entry(t.id, t.logprob)) })), refusal: null };
  }
  let offset = 0;
  const text_offset = lps.map((l) => { const o = offset; offset += text(l.id).length; return o; });
  return {
    tokens: lps.map((l) => text(l.id)),
    token_logprobs: lps.map((l) => l.logprob),
    top_logprobs: lps.map((l) => Object.fromEntries(l.top.map((t) => [text(t.id), t.logprob]))),
    text_offset,
  };
}
