// The model run inside a web browser, on its GPU (WebGPU): what the chat page loads from
// GET /toy-browser.js when "run in this browser" is chosen. The GGUF comes from the server
// (GET /v1/models/{id}/gguf) into memory; from there it is the same code as `toy serve
// --backend webgpu`: parseGGUF, the architecture's config and forward, buildGpuModel with the
// WGSL kernels of backends/webgpu, the tokenizer, the GGUF's chat template, generateAsync.
//
// Only browser-safe modules are imported here (no node: builtins, no file reading, not
// archs/index.ts): scripts/bundle-browser.mjs bundles this file with esbuild for the browser,
// with the native cpu backend resolved to backends/cpu/browser.ts (absent), and fails if
// anything else on the path needs Node.

import { gemma2 } from "../archs/gemma2.js";
import { gemma3 } from "../archs/gemma3.js";
import { gpt2 } from "../archs/gpt2.js";
import { buildGpuModel } from "../archs/gpuModel.js";
import { llama } from "../archs/llama.js";
import type { Architecture, LanguageModel } from "../archs/model.js";
import { olmoe } from "../archs/olmoe.js";
import { qwen2, qwen3 } from "../archs/qwen.js";
import { GpuKVCache } from "../blocks/gpuKVCache.js";
import { openBrowserGpu } from "../backends/webgpu/browserAdapter.js";
import type { AdapterReport } from "../backends/webgpu/device.js";
import { DEFAULT_SAMPLING } from "../engines/sampling.js";
import { generateAsync, type FinishReason } from "../engines/generate.js";
import { chatTemplateFor, type ChatMessage, type ChatTemplate } from "../io/chat/template.js";
import { parseGGUF } from "../io/gguf/parse.js";
import { tokenizerFromMetadata, type Tokenizer } from "../io/tokenizer/index.js";

/** The architectures the browser build carries. */
const ARCHITECTURES: Record<string, Architecture> = { llama, qwen2, qwen3, gemma2, gemma3, gpt2, olmoe };

export interface LoadOptions {
  /** Sent with the download (e.g. an Authorization header when the server has an API key). */
  headers?: Record<string, string>;
  /** Called as the bytes arrive; `total` is 0 when the server sent no Content-Length. */
  onProgress?: (loaded: number, total: number) => void;
}

export interface ChatOptions {
  maxTokens: number;
  /** 0 (the default): greedy, argmax on the GPU; above 0: sampled from the read-back logits with
   *  toy's other sampling defaults (top-k 40, top-p 0.95, min-p 0.05). */
  temperature?: number;
  /** The sampler's seed (default: a random one); the same seed gives the same reply. */
  seed?: number;
  /** Called with each piece of the answer's text as it is generated. */
  onText?: (text: string) => void;
  signal?: AbortSignal;
}

export interface ChatAnswer {
  /** The generated token ids (the stop token is not included). */
  tokens: number[];
  text: string;
  finishReason: FinishReason;
  /** Generated tokens per second, after the first. */
  tokensPerS: number;
  /** Prompt tokens not read again: the start of the conversation the previous reply left in the cache. */
  cachedTokens: number;
}

/** Positions of the KV cache kept between replies (or the model's context, if shorter). */
const CHAT_CACHE_POSITIONS = 4096;

/** A model loaded into this page's GPU. */
export interface BrowserModel {
  readonly model: LanguageModel;
  readonly tokenizer: Tokenizer;
  readonly template: ChatTemplate;
  readonly adapter: AdapterReport;
  /** A reply to a conversation, as the server's chat completion reads it (greedy by default). */
  chat(messages: ChatMessage[], opts: ChatOptions): Promise<ChatAnswer>;
}

/** Download the GGUF at `url` into memory, with progress. */
export async function download(url: string, opts: LoadOptions = {}): Promise<Uint8Array> {
  const res = await fetch(url, { headers: opts.headers });
  if (!res.ok) {
    let why = res.statusText;
    try { why = ((await res.json()) as { error?: { message?: string } }).error?.message ?? why; } catch { /* not JSON */ }
    throw new Error(`downloading the model from ${url} failed (${res.status}): ${why}`);
  }
  const total = Number(res.headers.get("content-length") ?? 0);
  if (!res.body) throw new Error(`downloading the model from ${url}: the response has no body`);
  // One allocation of the announced size; chunks are gathered only when the size is unknown.
  const reader = res.body.getReader();
  const whole = total > 0 ? new Uint8Array(total) : null;
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (whole) {
      if (loaded + value.byteLength > total) throw new Error(`downloading the model from ${url}: more bytes than its Content-Length (${total})`);
      whole.set(value, loaded);
    } else {
      chunks.push(value);
    }
    loaded += value.byteLength;
    opts.onProgress?.(loaded, total);
  }
  if (whole) {
    if (loaded !== total) throw new Error(`downloading the model from ${url}: got ${loaded} of ${total} bytes`);
    return whole;
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.byteLength; }
  return bytes;
}

/**
 * Open the GPU, download the model from `url` and build it on the GPU. Errors say what is
 * missing (WebGPU, an adapter) or why the model cannot run on webgpu.
 */
export async function loadInBrowser(url: string, opts: LoadOptions = {}): Promise<BrowserModel> {
  const rt = await openBrowserGpu();
  if ("error" in rt) throw new Error(rt.error);
  const name = url.split("/").slice(-2, -1)[0] ?? url;
  const file = parseGGUF(await download(url, opts), decodeURIComponent(name));
  const archName = file.metadata.get("general.architecture");
  const arch = typeof archName === "string" ? ARCHITECTURES[archName] : undefined;
  if (!arch) throw new Error(`${file.path}: architecture "${String(archName)}" does not run in the browser (it runs: ${Object.keys(ARCHITECTURES).join(", ")})`);
  const model = buildGpuModel(arch, file, arch.config(file), rt);
  const tokenizer = tokenizerFromMetadata(file.metadata, file.path);
  const template = chatTemplateFor(file.metadata, tokenizer);
  const stopIds = template.stopIds();
  // The conversation so far stays in one KV cache between replies: the next turn's prompt starts
  // with it, so only the new messages are read. A reply that would not fit starts a larger cache.
  let kept: { cache: GpuKVCache; ids: number[] } | null = null;
  return {
    model, tokenizer, template, adapter: rt.report,
    async chat(messages, o) {
      const prompt = template.encode(messages, true);
      const needed = Math.min(model.contextLength, prompt.length + o.maxTokens);
      if (kept && kept.cache.capacity < needed) {
        kept.cache.dispose(); // its GPU buffers now, not when the page is closed
        kept = null;
      }
      const cache = kept?.cache ?? (model.newCache(Math.min(model.contextLength, Math.max(needed, CHAT_CACHE_POSITIONS))) as GpuKVCache);
      const cachedIds = kept?.ids ?? [];
      const text = tokenizer.streamDecoder();
      let answer = "";
      const emit = (piece: string) => { if (piece) { answer += piece; o.onText?.(piece); } };
      let cachedTokens = 0;
      while (cachedTokens < Math.min(cachedIds.length, prompt.length - 1) && cachedIds[cachedTokens] === prompt[cachedTokens]) cachedTokens++;
      kept = null; // until the reply is done (a failed one leaves the cache in an unknown state)
      let out;
      try {
        out = await generateAsync(model, prompt, {
          maxTokens: o.maxTokens, stopIds, signal: o.signal, cache, cachedIds,
          sampling: { ...DEFAULT_SAMPLING, temperature: o.temperature ?? 0, seed: o.seed ?? Math.floor(Math.random() * 2 ** 32) },
          onToken: (id) => { emit(text.push(id)); },
        });
      } catch (e) {
        cache.dispose();
        throw e;
      }
      emit(text.flush());
      kept = { cache, ids: out.cachedIds };
      return { tokens: out.tokens, text: answer, finishReason: out.finishReason, tokensPerS: out.tokensPerS, cachedTokens };
    },
  };
}
