// The interactive chat of `toy infer MODEL --chat`: one conversation, its KV cache kept between
// turns (only the new part of the prompt is read), Ctrl-C stops an answer, Ctrl-D or /exit ends.
// Without a terminal, each line of standard input is one user turn.

import { createInterface } from "node:readline";
import { ToyError } from "../errors.js";
import { chatTemplateForChat, type ChatMessage } from "../io/chat/template.js";
import type { OpenedModel } from "./common.js";
import { streamAnswer, type InferFlags } from "./commands/infer.js";
import type { KVCache } from "../blocks/kvCache.js";

export async function interactiveChat(opened: OpenedModel, flags: InferFlags): Promise<void> {
  const template = chatTemplateForChat(opened.model.file.metadata, opened.tokenizer, opened.model.file.path);
  const stopIds = template.stopIds();
  const messages: ChatMessage[] = flags.system !== undefined ? [{ role: "system", content: flags.system }] : [];
  const tty = process.stdin.isTTY === true;
  const rl = createInterface({ input: process.stdin, output: tty ? process.stdout : undefined, terminal: tty });
  if (tty) process.stdout.write(`chatting with ${opened.path} (Ctrl-C stops an answer, Ctrl-D or /exit ends)\n`);
  // In raw terminal mode Ctrl-C reaches readline, not the process: stop the answer, or end the chat.
  let answering = false;
  rl.on("SIGINT", () => (answering ? process.emit("SIGINT") : rl.close()));
  let cache: KVCache | undefined;
  let cachedIds: number[] = [];
  const prompt = () => { if (tty) rl.setPrompt("> "), rl.prompt(); };
  prompt();
  for await (const line of rl) {
    const text = line.trim();
    if (text === "/exit" || text === "/quit") break;
    if (text === "") { prompt(); continue; }
    messages.push({ role: "user", content: text });
    const ids = template.encode(messages);
    try {
      answering = true;
      const result = await streamAnswer(opened, ids, stopIds, { ...flags, json: false }, cache ? { cache, cachedIds } : undefined);
      cache = result.cache;
      cachedIds = result.cachedIds;
      messages.push({ role: "assistant", content: opened.tokenizer.decode(result.tokens) });
    } catch (e) {
      if (!(e instanceof ToyError)) throw e;
      process.stderr.write(`toy: ${e.message}\n`);
      messages.pop();
    } finally {
      answering = false;
    }
    prompt();
  }
  rl.close();
}
