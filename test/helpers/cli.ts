// Running the built `toy` command in a child process.

import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { projectRoot } from "./fixtures.js";

export const toyBin = join(projectRoot, "dist", "src", "cli", "main.js");

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function toy(args: string[], opts: { input?: string; env?: Record<string, string>; timeout?: number } = {}): CliResult {
  const r = spawnSync(process.execPath, [toyBin, ...args], {
    encoding: "utf8", input: opts.input, timeout: opts.timeout ?? 120_000,
    env: { ...process.env, ...opts.env }, maxBuffer: 256 * 1024 * 1024,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Run toy and parse its --json output (asserting success). */
export function toyJson<T = any>(args: string[], opts: Parameters<typeof toy>[1] = {}): T {
  const r = toy(args, opts);
  if (r.status !== 0) throw new Error(`toy ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** Run toy without blocking the event loop (needed when the test itself serves HTTP to it). */
export function toyAsync(args: string[], opts: { env?: Record<string, string>; timeout?: number } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [toyBin, ...args], { env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeout ?? 120_000);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
