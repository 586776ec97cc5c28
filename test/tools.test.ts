// Tool calls per template family (src/serve/tools.ts), with real templates in
// test/fixtures/chat-templates (Qwen 2.5: hermes, Llama 3.1: llama3, Mistral Nemo: mistral, and
// ChatML without tools: generic): the template renders the tools and the history's calls, the
// constrained grammar accepts exactly a valid call, and the parser finds calls in a stream.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseGbnf } from "../src/engines/grammar/gbnf.js";
import { DEAD, feed, Program, Recognizer } from "../src/engines/grammar/recognizer.js";
import { ChatTemplate, FALLBACK_TEMPLATE, parseMessages, type ToolSpec } from "../src/io/chat/template.js";
import type { Tokenizer } from "../src/io/tokenizer/index.js";
import { parseCalls, renderInputs, toolCallGbnf, ToolCallParser, toolFamily, type ToolFamily, type ToolSetup } from "../src/serve/tools.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const templateText = (name: string) => readFileSync(join(here, "..", "..", "test", "fixtures", "chat-templates", `${name}.jinja`), "utf8");

/** Rendering needs only the BOS and EOS texts of a vocabulary. */
const tokenizer = { bos: 1, eos: 2, piece: (id: number) => (id === 1 ? "<s>" : "</s>") } as unknown as Tokenizer;

const TOOLS: ToolSpec[] = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" }, unit: { enum: ["c", "f"] } }, required: ["city", "unit"], additionalProperties: false } } },
  { type: "function", function: { name: "add", parameters: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"], additionalProperties: false } } },
];

const FAMILIES: { family: ToolFamily; template: string; callText: string; renderedCall: RegExp }[] = [
  { family: "hermes", template: templateText("Qwen-Qwen2.5-7B-Instruct"), callText: '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>', renderedCall: /<tool_call>\n\{"name": "add", "arguments": \{"a": 2, "b": 3\}\}\n<\/tool_call>/ },
  { family: "llama3", template: templateText("meta-llama-Llama-3.1-8B-Instruct"), callText: '{"name": "add", "parameters": {"a": 2, "b": 3}}', renderedCall: /\{"name": "add", "parameters": \{"a": 2, "b": 3\}\}/ },
  { family: "mistral", template: templateText("mistralai-Mistral-Nemo-Instruct-2407"), callText: '[TOOL_CALLS][{"name": "add", "arguments": {"a": 2, "b": 3}}]', renderedCall: /\[TOOL_CALLS\]\[\{"name": "add", "arguments": \{"a": 2, "b": 3\}, "id": "abcDEF123"\}\]/ },
  { family: "generic", template: FALLBACK_TEMPLATE, callText: '{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}', renderedCall: /\{"tool_calls":\[\{"name":"add","arguments":\{"a":2,"b":3\}\}\]\}/ },
];

const history = parseMessages([
  { role: "system", content: "You are helpful." },
  { role: "user", content: "Add 2 and 3." },
  { role: "assistant", content: null, tool_calls: [{ id: "abcDEF123", type: "function", function: { name: "add", arguments: '{"a": 2, "b": 3}' } }] },
  { role: "tool", tool_call_id: "abcDEF123", content: "5" },
], "messages");

const accepts = (gbnf: string, text: string) => {
  const r = new Recognizer(new Program(parseGbnf(gbnf)));
  const s = feed(r, r.start, new TextEncoder().encode(text));
  return s !== DEAD && r.accepts(s);
};

describe("tool calls by template family", () => {
  for (const f of FAMILIES) {
    test(`${f.family}: detected, rendered with tools and history, constrained, parsed`, () => {
      const template = new ChatTemplate(f.template, tokenizer, f.template === FALLBACK_TEMPLATE);
      assert.equal(toolFamily(template), f.family);
      const setup: ToolSetup = { family: f.family, tools: TOOLS, choice: "auto", parallel: true };
      const inputs = renderInputs(history, setup, template);
      const text = template.render(inputs.messages, true, inputs.tools);
      assert.match(text, /get_weather/, "the tools are shown to the model");
      assert.match(text, /The weather in a city/);
      assert.match(text, f.renderedCall, "the history's call is written the family's way");
      assert.match(text, /5/, "and its result");

      // Parsing the family's call text, whole and streamed in small pieces.
      const whole = new ToolCallParser(f.family, false);
      const out = [whole.push(f.callText), whole.end()];
      const calls = out.flatMap((o) => o.calls);
      assert.equal(calls.length, 1);
      assert.equal(calls[0].function.name, "add");
      assert.deepEqual(JSON.parse(calls[0].function.arguments), { a: 2, b: 3 });
      assert.equal(out.map((o) => o.content).join(""), "");
      if (f.family === "mistral") assert.match(calls[0].id, /^[A-Za-z0-9]{9}$/); else assert.match(calls[0].id, /^call_[A-Za-z0-9]{24}$/);
      const streamed = new ToolCallParser(f.family, false);
      const parts = [...f.callText.match(/.{1,3}/gs)!.map((p) => streamed.push(p)), streamed.end()];
      assert.deepEqual(parts.flatMap((o) => o.calls).map((c) => [c.function.name, c.function.arguments]), [["add", calls[0].function.arguments]]);

      // Plain text stays content; text that looks like a call but is not one too.
      const prose = new ToolCallParser(f.family, false);
      assert.equal([prose.push("It is sunny "), prose.push("in Paris."), prose.end()].map((o) => o.content).join(""), "It is sunny in Paris.");
      const broken = new ToolCallParser(f.family, false);
      const brokenText = f.callText.slice(0, -4);
      assert.deepEqual([broken.push(brokenText), broken.end()].flatMap((o) => o.calls), []);

      // Constrained: a named function's grammar accepts its valid calls only.
      const named = toolCallGbnf({ ...setup, choice: { name: "add" }, parallel: false });
      const constrainedText = f.family === "mistral" ? f.callText.replace("[TOOL_CALLS]", "") : f.callText;
      assert.ok(accepts(named, constrainedText), named);
      assert.ok(!accepts(named, constrainedText.replace('"b": 3', '"b": "3"')), "arguments follow the schema");
      assert.ok(!accepts(named, constrainedText.replace('"add"', '"get_weather"')), "only the named function");
      const required = toolCallGbnf({ ...setup, choice: "required" });
      assert.ok(accepts(required, constrainedText));
      const weather = constrainedText.replace('"add"', '"get_weather"').replace('{"a": 2, "b": 3}', '{"city": "Paris", "unit": "c"}');
      assert.ok(accepts(required, weather), weather);
      assert.deepEqual(parseCalls(f.family === "mistral" ? weather : weather.replace(/<\/?tool_call>/g, ""), f.family)?.map((c) => c.name), ["get_weather"]);
    });
  }

  test("hermes: calls inside text, several in one answer; text around them is content", () => {
    const p = new ToolCallParser("hermes", false);
    const text = 'Let me check.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}\n</tool_call>';
    const outs = [...text.match(/.{1,5}/gs)!.map((t) => p.push(t)), p.end()];
    assert.equal(outs.map((o) => o.content).join("").trim(), "Let me check.");
    assert.deepEqual(outs.flatMap((o) => o.calls).map((c) => c.function.name), ["add", "get_weather"]);
  });

  test("tool_choice none keeps the tools out of the prompt", () => {
    const template = new ChatTemplate(templateText("Qwen-Qwen2.5-7B-Instruct"), tokenizer);
    const inputs = renderInputs(history.slice(0, 2), { family: "hermes", tools: TOOLS, choice: "none", parallel: true }, template);
    assert.doesNotMatch(template.render(inputs.messages, true, inputs.tools), /get_weather/);
  });
});
