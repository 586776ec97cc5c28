// Starting `toy serve` in a child process for a test, and a few HTTP helpers around it.

import { spawn, type ChildProcess } from "node:child_process";
import OpenAI from "openai";
import { toyBin } from "./cli.js";

export interface Served {
  url: string;
  port: number;
  proc: ChildProcess;
  client: OpenAI;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** Send a signal (default SIGTERM) and wait for the exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Start `toy serve MODEL --port 0 ...ARGS` and wait for the address it prints. */
export async function serve(modelPath: string, args: string[], apiKey = "unused"): Promise<Served> {
  const proc = spawn(process.execPath, [toyBin, "serve", modelPath, "--port", "0", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr!.on("data", (d: Buffer) => { stderr += d.toString(); });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`toy serve did not start: ${stderr}`)), 120_000);
    const onData = () => {
      const m = /serving \S+ on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) { clearTimeout(timer); proc.stderr!.off("data", onData); resolve(m[1]); }
    };
    proc.stderr!.on("data", onData);
    proc.once("exit", (code) => { clearTimeout(timer); reject(new Error(`toy serve exited ${code}: ${stderr}`)); });
  });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 300_000 });
  return {
    url, port: Number(new URL(url).port), proc, client,
    stderr: () => stderr,
    stop: (signal = "SIGTERM") => new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
      proc.once("exit", (code) => resolve(code));
      proc.kill(signal);
    }),
  };
}

/** Poll until `cond` holds (or fail after `ms`). */
export async function until(what: string, cond: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** One sample of a Prometheus text exposition: the value of `name{labels}` (labels matched as a subset), summed. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}
