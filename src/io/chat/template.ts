// Chat templates: the GGUF's own `tokenizer.chat_template` (Jinja), rendered with
// @huggingface/jinja as Hugging Face renders it (trim_blocks and lstrip_blocks on).
// A model without a template gets ChatML, the most common format, and says so.

import { Template } from "@huggingface/jinja";
import { ToyError, UsageError } from "../../errors.js";
import type { GGUFValue } from "../gguf/reader.js";
import type { Tokenizer } from "../tokenizer/index.js";

export interface ChatMessage {
  role: string;
  /** null: an assistant turn that only calls tools. */
  content: string | null;
  name?: string;
  /** An assistant turn's tool calls, as Hugging Face templates read them (arguments as an object). */
  tool_calls?: TemplateToolCall[];
  /** A "tool" message answers this call. */
  tool_call_id?: string;
}

export interface TemplateToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: unknown };
}

/** A tool as OpenAI's API and Hugging Face's `apply_chat_template(tools=...)` describe it. */
export interface ToolSpec {
  type: "function";
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
}

/** ChatML, used when the model file carries no template of its own. */
export const FALLBACK_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export class ChatTemplate {
  private template: Template;

  constructor(readonly source: string, private tokenizer: Tokenizer, readonly isFallback = false) {
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new ToyError(`the model's chat template does not parse: ${(e as Error).message}`);
    }
  }

  /** Whether the template renders a `tools` list itself (else the caller describes the tools). */
  get takesTools(): boolean {
    return /\btools\b/.test(this.source);
  }

  /** The prompt text for a conversation, ready to tokenize with special tokens parsed. */
  render(messages: ChatMessage[], addGenerationPrompt = true, tools?: ToolSpec[]): string {
    const t = this.tokenizer;
    try {
      return this.template.render({
        messages,
        ...(tools !== undefined ? { tools } : {}),
        add_generation_prompt: addGenerationPrompt,
        bos_token: t.bos !== undefined ? t.piece(t.bos) : "",
        eos_token: t.eos !== undefined ? t.piece(t.eos) : "",
      });
    } catch (e) {
      // raise_exception(...) in a template lands here: its message is the template's own words.
      throw new UsageError(`the chat template rejected the conversation: ${(e as Error).message}`);
    }
  }

  /** Token ids of the rendered conversation (special-token text parsed, no extra BOS). */
  encode(messages: ChatMessage[], addGenerationPrompt = true, tools?: ToolSpec[]): number[] {
    return this.tokenizer.encode(this.render(messages, addGenerationPrompt, tools), { addBos: false, parseSpecial: true });
  }

  /** Ids that end the assistant's turn: the tokenizer's stop ids plus the template's end-of-turn tokens. */
  stopIds(): Set<number> {
    const ids = new Set<number>(this.tokenizer.stopIds);
    for (const text of ["<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>"]) {
      const id = this.tokenizer.tokenId(text);
      if (id !== undefined && this.source.includes(text)) ids.add(id);
    }
    return ids;
  }
}

export function chatTemplateFor(metadata: Map<string, GGUFValue>, tokenizer: Tokenizer): ChatTemplate {
  const source = metadata.get("tokenizer.chat_template");
  if (typeof source === "string" && source.trim() !== "") return new ChatTemplate(source, tokenizer);
  return new ChatTemplate(FALLBACK_TEMPLATE, tokenizer, true);
}

/** The template a chat needs: the file's own, or ChatML where the vocabulary has ChatML's tokens.
 *  A base model with neither (Gemma 3 270M) gets a UsageError pointing to plain continuation. */
export function chatTemplateForChat(metadata: Map<string, GGUFValue>, tokenizer: Tokenizer, path: string): ChatTemplate {
  const template = chatTemplateFor(metadata, tokenizer);
  if (template.isFallback && (tokenizer.tokenId("<|im_start|>") === undefined || tokenizer.tokenId("<|im_end|>") === undefined)) {
    throw new UsageError(`${path}: the model has no chat template (tokenizer.chat_template) and its vocabulary has no ChatML tokens: it is a base model, not a chat model; use --prompt TEXT for a continuation`);
  }
  return template;
}

/**
 * Check that a parsed JSON value is an OpenAI-style message array; say exactly what is wrong.
 * Messages keep only the fields a template reads (role, content, name, tool_calls, tool_call_id),
 * and a tool call's `arguments` (a JSON string in OpenAI's API) become an object, as Hugging Face
 * templates expect.
 */
export function parseMessages(value: unknown, where: string): ChatMessage[] {
  if (!Array.isArray(value)) throw new UsageError(`${where}: expected a JSON array of messages, got ${value === null ? "null" : typeof value}`);
  if (value.length === 0) throw new UsageError(`${where}: the message array is empty`);
  return value.map((m, i) => {
    const at = `${where}[${i}]`;
    if (typeof m !== "object" || m === null || Array.isArray(m)) throw new UsageError(`${where}: message ${i} is not an object`);
    const { role, content, name, tool_calls, tool_call_id } = m as Record<string, unknown>;
    if (typeof role !== "string" || role === "") throw new UsageError(`${where}: message ${i} has no "role" string`);
    const msg: ChatMessage = { role, content: null };
    if (typeof content === "string") msg.content = content;
    // OpenAI's content parts: [{ type: "text", text }]
    else if (Array.isArray(content) && content.every((p) => typeof p === "object" && p !== null && (p as { type?: unknown }).type === "text" && typeof (p as { text?: unknown }).text === "string")) {
      msg.content = content.map((p) => (p as { text: string }).text).join("");
    } else if (!(content == null && role === "assistant" && tool_calls != null)) {
      throw new UsageError(`${where}: message ${i} "content" must be a string or a list of text parts`);
    }
    if (name != null) {
      if (typeof name !== "string") throw new UsageError(`${at}.name: expected a string`);
      msg.name = name;
    }
    if (tool_calls != null) {
      if (role !== "assistant") throw new UsageError(`${at}.tool_calls: only assistant messages carry tool calls`);
      if (!Array.isArray(tool_calls)) throw new UsageError(`${at}.tool_calls: expected an array`);
      msg.tool_calls = tool_calls.map((c, j) => toolCallOf(c, `${at}.tool_calls[${j}]`));
    }
    if (role === "tool") {
      if (typeof tool_call_id !== "string") throw new UsageError(`${at}.tool_call_id: a tool message needs the id of the call it answers`);
      msg.tool_call_id = tool_call_id;
    }
    return msg;
  });
}

function toolCallOf(c: unknown, at: string): TemplateToolCall {
  const call = c as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
  if (typeof call !== "object" || call === null) throw new UsageError(`${at}: expected an object`);
  if (typeof call.id !== "string") throw new UsageError(`${at}.id: expected a string`);
  if (call.type !== undefined && call.type !== "function") throw new UsageError(`${at}.type: expected "function"`);
  const f = call.function;
  if (typeof f !== "object" || f === null || typeof f.name !== "string") throw new UsageError(`${at}.function.name: expected a string`);
  let args: unknown = f.arguments ?? {};
  if (typeof args === "string") {
    try { args = JSON.parse(args); } catch { throw new UsageError(`${at}.function.arguments: not valid JSON`); }
  }
  return { id: call.id, type: "function", function: { name: f.name, arguments: args } };
}
