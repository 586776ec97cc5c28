// Tool calls (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`) for the common families of
// chat templates. Each family has its own way to show tools to the model and its own way for the
// model to call them; the family is read from the template's text:
//
//   hermes   (Qwen 2.5, Hermes)  <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one block per call
//   llama3   (Llama 3.1 – 3.3)   {"name": "f", "parameters": {...}}, the whole answer (maybe after <|python_tag|>)
//   mistral  (Mistral, Nemo)     [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   generic  (any other)         {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}, the whole answer;
//                                the tools and this format are described in a system message,
//                                since the template itself knows nothing of tools.
//
// With tool_choice "required" or a named function, decoding is constrained (a grammar built from
// the tools' parameter schemas), so the answer is always a valid call.

import { randomBytes } from "node:crypto";
import { parseGbnf, printGbnf, type Expr, type Grammar } from "../engines/grammar/gbnf.js";
import { gbnfLiteral, schemaToGbnf } from "../engines/grammar/schema.js";
import type { ChatMessage, ChatTemplate, ToolSpec } from "../io/chat/template.js";

export type ToolFamily = "hermes" | "llama3" | "mistral" | "generic";

/** A tool call as the answer reports it: arguments are a JSON string. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ToolChoice = "none" | "auto" | "required" | { name: string };

export interface ToolSetup {
  family: ToolFamily;
  tools: ToolSpec[];
  choice: ToolChoice;
  parallel: boolean;
}

export function toolFamily(template: ChatTemplate): ToolFamily {
  const s = template.source;
  if (!template.takesTools) return "generic";
  if (s.includes("<tool_call>")) return "hermes";
  if (s.includes("[TOOL_CALLS]")) return "mistral";
  if (s.includes("<|python_tag|>") || (s.includes("<|start_header_id|>") && s.includes('"parameters"'))) return "llama3";
  return "generic";
}

/**
 * The conversation as the template gets it. Templates that take tools get them (and the history's
 * tool calls) as Hugging Face passes them; for the others the tools are described in a system
 * message and past calls are written in the generic JSON form.
 */
export function renderInputs(messages: ChatMessage[], setup: ToolSetup | undefined, template: ChatTemplate): { messages: ChatMessage[]; tools?: ToolSpec[] } {
  const offered = setup && setup.choice !== "none" ? setup.tools : undefined;
  if (template.takesTools) return { messages, tools: offered };
  const plain = messages.map((m): ChatMessage => {
    if (m.tool_calls) {
      const calls = m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
      return { role: m.role, content: `${m.content ? m.content + "\n" : ""}${JSON.stringify({ tool_calls: calls })}` };
    }
    if (m.role === "tool") return { role: "tool", content: m.content ?? "" };
    return { role: m.role, content: m.content ?? "" };
  });
  if (!offered) return { messages: plain };
  const list = offered.map((t) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters ?? { type: "object" } }));
  const howTo = `You can call these tools:\n${JSON.stringify(list)}\n\nTo call tools, answer with JSON only, in this form: {"tool_calls": [{"name": "<tool name>", "arguments": {<arguments>}}]}. Otherwise answer normally.`;
  if (plain[0]?.role === "system") return { messages: [{ role: "system", content: `${plain[0].content}\n\n${howTo}` }, ...plain.slice(1)] };
  return { messages: [{ role: "system", content: howTo }, ...plain] };
}

/** The grammar every answer must follow when a call is required (tool_choice "required" or named). */
export function toolCallGbnf(setup: ToolSetup): string {
  const tools = typeof setup.choice === "object" ? setup.tools.filter((t) => t.function.name === (setup.choice as { name: string }).name) : setup.tools;
  const argsKey = setup.family === "llama3" ? "parameters" : "arguments";
  const rules = new Map<string, Expr>();
  const calls: string[] = [];
  tools.forEach((t, i) => {
    // Each tool's parameter schema becomes rules of its own, prefixed t0-, t1-, ...
    const g = parseGbnf(schemaToGbnf(t.function.parameters ?? { type: "object" }, `tools[${i}].function.parameters`));
    for (const [name, e] of renamed(g, `t${i}-`)) rules.set(name, e);
    calls.push(`"{" ws ${gbnfLiteral('"name"')} ws ":" ws ${gbnfLiteral(JSON.stringify(t.function.name))} ws "," ws ${gbnfLiteral(`"${argsKey}"`)} ws ":" ws t${i}-root ws "}"`);
  });
  const many = setup.parallel && setup.family !== "llama3";
  const top = {
    hermes: `"<tool_call>\\n" call "\\n</tool_call>"${many ? ' ("\\n<tool_call>\\n" call "\\n</tool_call>")*' : ""}`,
    llama3: "call",
    // [TOOL_CALLS] is a control token (no text): the constrained answer is the list that follows it.
    mistral: `"[" call${many ? ' ("," ws call)*' : ""} "]"`,
    generic: `"{" ws ${gbnfLiteral('"tool_calls"')} ws ":" ws "[" ws call${many ? ' (ws "," ws call)*' : ""} ws "]" ws "}"`,
  }[setup.family];
  const head = `root ::= ${top}\ncall ::= ${calls.join(" | ")}\nws ::= " "?\n`; // a call is compact JSON
  return printGbnf(parseGbnf(head + printGbnf({ rules, root: "t0-root" })));
}

function renamed(g: Grammar, prefix: string): Map<string, Expr> {
  const walk = (e: Expr): Expr => {
    switch (e.type) {
      case "ref": return { type: "ref", name: prefix + e.name };
      case "seq": return { type: "seq", items: e.items.map(walk) };
      case "alt": return { type: "alt", options: e.options.map(walk) };
      case "repeat": return { ...e, expr: walk(e.expr) };
      default: return e;
    }
  };
  return new Map([...g.rules].map(([n, e]) => [prefix + n, walk(e)]));
}

const ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
function randomId(n: number): string {
  return [...randomBytes(n)].map((b) => ALNUM[b % ALNUM.length]).join("");
}

/** A new call id: Mistral's templates insist on 9 letters and digits; OpenAI's look like call_…. */
export function callId(family: ToolFamily): string {
  return family === "mistral" ? randomId(9) : `call_${randomId(24)}`;
}

const MARKERS: Record<ToolFamily, string | undefined> = { hermes: "<tool_call>", llama3: "<|python_tag|>", mistral: "[TOOL_CALLS]", generic: undefined };

/** What the answer so far has produced: text for `content`, and finished calls. */
export interface ToolOutput {
  content: string;
  calls: ToolCall[];
}

/**
 * Splits an answer into content and tool calls as it streams. Hermes calls are blocks anywhere in
 * the text (each is sent as soon as its closing tag arrives); the other families' calls are the
 * whole answer, so an answer that starts like one is held until the end and then parsed. Text
 * that does not parse as a call is returned as content: nothing the model wrote is lost.
 */
export class ToolCallParser {
  private buf = "";
  private mode: "undecided" | "content" | "call" = "undecided";
  private sawCall = false;

  constructor(private family: ToolFamily, private forced: boolean) {}

  push(text: string): ToolOutput {
    this.buf += text;
    return this.family === "hermes" ? this.hermes(false) : this.whole(false);
  }

  end(): ToolOutput {
    return this.family === "hermes" ? this.hermes(true) : this.whole(true);
  }

  private hermes(final: boolean): ToolOutput {
    const open = "<tool_call>", close = "</tool_call>";
    const out: ToolOutput = { content: "", calls: [] };
    for (;;) {
      if (this.mode !== "call") {
        const at = this.buf.indexOf(open);
        if (at === -1) {
          const keep = final ? 0 : heldBack(this.buf, open);
          out.content += this.buf.slice(0, this.buf.length - keep);
          this.buf = this.buf.slice(this.buf.length - keep);
          break;
        }
        out.content += this.buf.slice(0, at);
        this.buf = this.buf.slice(at + open.length);
        this.mode = "call";
      }
      const end = this.buf.indexOf(close);
      if (end === -1 && !final) break;
      const inner = end === -1 ? this.buf : this.buf.slice(0, end);
      this.buf = end === -1 ? "" : this.buf.slice(end + close.length);
      this.mode = "content";
      const calls = parseCalls(inner, this.family);
      if (calls) { out.calls.push(...calls.map((c) => this.named(c))); this.sawCall = true; }
      else out.content += open + inner + (end === -1 ? "" : close);
      if (final && this.buf === "") break;
    }
    // Whitespace around calls is layout, not content.
    if (this.sawCall && out.content.trim() === "") out.content = "";
    return out;
  }

  private whole(final: boolean): ToolOutput {
    if (this.mode === "undecided") {
      const start = this.buf.trimStart();
      const marker = MARKERS[this.family];
      const callLike = (marker !== undefined && start.startsWith(marker)) || start.startsWith("{") || (this.family === "mistral" && start.startsWith("["));
      const maybe = start === "" || (marker !== undefined && marker.startsWith(start));
      if (callLike || this.forced) this.mode = "call";
      else if (!maybe || final) this.mode = "content";
      else return { content: "", calls: [] };
    }
    if (this.mode === "content") {
      const content = this.buf;
      this.buf = "";
      return { content, calls: [] };
    }
    if (!final) return { content: "", calls: [] };
    const text = this.buf;
    this.buf = "";
    const marker = MARKERS[this.family];
    let body = text.trim();
    if (marker !== undefined && body.startsWith(marker)) body = body.slice(marker.length);
    const calls = parseCalls(body, this.family);
    return calls ? { content: "", calls: calls.map((c) => this.named(c)) } : { content: text, calls: [] };
  }

  private named(c: { name: string; arguments: unknown }): ToolCall {
    return { id: callId(this.family), type: "function", function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}) } };
  }
}

/** Length of the longest end of `text` that begins `marker`. */
function heldBack(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) if (text.endsWith(marker.slice(0, n))) return n;
  return 0;
}

/** The calls a family's call text holds, or undefined when it is not one. */
export function parseCalls(text: string, family: ToolFamily): { name: string; arguments: unknown }[] | undefined {
  const one = (v: unknown) => {
    const o = v as { name?: unknown; arguments?: unknown; parameters?: unknown };
    if (typeof o !== "object" || o === null || typeof o.name !== "string") return undefined;
    const args = o.arguments ?? o.parameters ?? {};
    if (typeof args !== "object" && typeof args !== "string") return undefined;
    return { name: o.name, arguments: args };
  };
  const all = (vs: unknown[]) => {
    const calls = vs.map(one);
    return calls.length > 0 && calls.every((c) => c !== undefined) ? (calls as { name: string; arguments: unknown }[]) : undefined;
  };
  const json = (s: string): unknown => { try { return JSON.parse(s); } catch { return undefined; } };
  const body = text.trim();
  switch (family) {
    case "hermes": { const v = json(body); return v === undefined ? undefined : all([v]); }
    case "mistral": { const v = json(body); return Array.isArray(v) ? all(v) : v === undefined ? undefined : all([v]); }
    case "llama3": {
      // One call, or several separated by ";" (as Llama 3.x sometimes writes them).
      const v = json(body);
      if (v !== undefined) return Array.isArray(v) ? all(v) : all([v]);
      const parts = body.split(/;\s*/).filter((p) => p !== "").map(json);
      return parts.some((p) => p === undefined) ? undefined : all(parts);
    }
    case "generic": {
      const v = json(body) as { tool_calls?: unknown; tool_call?: unknown } | undefined;
      if (typeof v !== "object" || v === null) return undefined;
      if (Array.isArray(v.tool_calls)) return all(v.tool_calls);
      if (v.tool_call !== undefined) return all([v.tool_call]);
      return undefined;
    }
  }
}
