// Timestamps of a request's way to its first token, for finding where time goes under load:
// set TOY_SERVE_TRACE=FILE and every event is appended there as "ms event detail" (ms from the
// epoch, with performance.now()'s precision). Off (one boolean test per event) when the variable is unset.

import { appendFileSync } from "node:fs";

const file = process.env.TOY_SERVE_TRACE;
const lines: string[] = [];

/** Whether events are recorded (test it before building an event's detail). */
export const tracing = file !== undefined && file !== "";

/** Record an event (kept in memory; written out by flushTrace, so tracing costs no I/O in a tick). */
export function trace(event: string, detail: string | number = ""): void {
  if (tracing) lines.push(`${(performance.timeOrigin + performance.now()).toFixed(3)} ${event} ${detail}`);
}

/** Write what was recorded since the last flush. */
export function flushTrace(): void {
  if (tracing && lines.length > 0) appendFileSync(file!, lines.splice(0).join("\n") + "\n");
}

if (tracing) {
  setInterval(flushTrace, 1000).unref();
  process.on("exit", flushTrace);
}
