// Bad input to the CLI gets a one-line reason and a defined exit code, never a stack trace:
// 2 usage error, 3 bad or unsupported model file.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeGGUF } from "../src/io/gguf/writer.js";
import { toy } from "./helpers/cli.js";
import { tinyLlama, writeTinyLlama } from "./helpers/tiny-model.js";

const dir = mkdtempSync(join(tmpdir(), "toy-cli-errors-"));
const model = join(dir, "tiny.gguf");
writeTinyLlama(model, { ctx: 16 });

function expectError(args: string[], code: number, pattern: RegExp): void {
  const r = toy(args);
  assert.equal(r.status, code, `toy ${args.join(" ")}: exit ${r.status}, stderr ${r.stderr}`);
  assert.match(r.stderr, pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
}

test("usage errors exit 2", () => {
  expectError(["infer", model, "--bogus"], 2, /unknown option '--bogus'/);
  expectError(["infer", model], 2, /give exactly one of --prompt/);
  expectError(["infer", model, "--prompt", "a", "--ids", "1"], 2, /give exactly one of/);
  expectError(["infer", model, "--ids", "1,x"], 2, /--ids must be a comma-separated list/);
  expectError(["infer", model, "--ids", "1,9999"], 2, /token id 9999 is outside the vocabulary/);
  expectError(["infer", model, "--ids", "1", "--temperature", "hot"], 2, /--temperature must be a number/);
  expectError(["infer", model, "--ids", "1", "--backend", "gpu"], 2, /Allowed choices are ts, cpu/);
  expectError(["eval", model], 2, /give exactly one of --prompt/);
  expectError(["eval", model, "--ids", "1,2", "--window", "64"], 2, /--window 64 is larger than the model's context \(16 tokens\)/);
  expectError(["infer", model, "--ids", Array.from({ length: 20 }, () => "5").join(","), "--backend", "ts"], 2, /prompt \(20 tokens\) is longer than the context \(16 tokens\)/);
  expectError(["eval", model, "--ids", Array.from({ length: 20 }, () => "5").join(","), "--backend", "ts"], 2, /longer than the context \(16 tokens\); use --window/);
  expectError(["infer", model, "--ids", "1", "--cache-type", "q4"], 2, /argument 'q4' is invalid. Allowed choices are f32, f16, q8_0/);
  expectError(["infer", model, "--ids", "1", "--cache-type", "q8_0", "--backend", "ts"], 2, /q8_0 needs a head size that is a multiple of 32; this model's is 8/);
  expectError(["nonsense"], 2, /unknown command 'nonsense'/);
});

test("bad messages files exit 2 with the reason", () => {
  const notArray = join(dir, "not-array.json");
  writeFileSync(notArray, JSON.stringify({ role: "user", content: "hi" }));
  expectError(["infer", model, "--messages", notArray, "--backend", "ts"], 2, /expected a JSON array of messages/);
  const badJson = join(dir, "bad.json");
  writeFileSync(badJson, "[{");
  expectError(["infer", model, "--messages", badJson, "--backend", "ts"], 2, /not valid JSON/);
  const noRole = join(dir, "norole.json");
  writeFileSync(noRole, JSON.stringify([{ content: "hi" }]));
  expectError(["infer", model, "--messages", noRole, "--backend", "ts"], 2, /message 0 has no "role"/);
});

test("bad model files exit 3 naming the file", () => {
  expectError(["infer", join(dir, "missing.gguf"), "--ids", "1"], 3, /missing\.gguf: no such model file/);
  expectError(["infer", dir, "--ids", "1"], 3, /is a folder/);
  const notGguf = join(dir, "text.gguf");
  writeFileSync(notGguf, "hello world, not a model");
  expectError(["infer", notGguf, "--ids", "1"], 3, /not a GGUF file: magic/);
  const bytes = encodeGGUF(tinyLlama().spec);
  const truncated = join(dir, "truncated.gguf");
  writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
  expectError(["infer", truncated, "--ids", "1"], 3, /truncated\.gguf: .*(runs past the end|truncated)/);
  // An architecture toy does not know.
  const spec = tinyLlama().spec;
  const unknown = join(dir, "mamba.gguf");
  writeFileSync(unknown, encodeGGUF({ ...spec, metadata: (spec.metadata as [string, unknown][]).map(([k, v, ...rest]) => [k, k === "general.architecture" ? "mamba" : v, ...rest]) as never }));
  expectError(["infer", unknown, "--ids", "1"], 3, /architecture "mamba" is not supported/);
  // A required tensor missing.
  const noNorm = join(dir, "no-norm.gguf");
  writeFileSync(noNorm, encodeGGUF({ ...spec, tensors: spec.tensors.filter((t) => t.name !== "output_norm.weight") }));
  expectError(["infer", noNorm, "--ids", "1"], 3, /tensor output_norm\.weight is missing/);
});

test("a role the chat template rejects shows the template's own message (exit 2)", () => {
  const spec = tinyLlama().spec;
  const template = "{% for message in messages %}{% if message['role'] not in ['system', 'user', 'assistant'] %}" +
    "{{ raise_exception('Conversation roles must be system, user or assistant') }}{% endif %}" +
    "{{ '<s>' + message['role'] + ': ' + message['content'] + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}";
  const path = join(dir, "templated.gguf");
  writeFileSync(path, encodeGGUF({ ...spec, metadata: [...(spec.metadata as never[]), ["tokenizer.chat_template", template]] as never }));
  const messages = join(dir, "robot.json");
  writeFileSync(messages, JSON.stringify([{ role: "robot", content: "beep" }]));
  expectError(["infer", path, "--messages", messages, "--backend", "ts"], 2, /chat template rejected the conversation: Conversation roles must be system, user or assistant/);
  const ok = join(dir, "user.json");
  writeFileSync(ok, JSON.stringify([{ role: "user", content: "a" }]));
  const r = toy(["infer", path, "--messages", ok, "--backend", "ts", "--max-tokens", "2", "--json"]);
  assert.equal(r.status, 0, r.stderr);
});
