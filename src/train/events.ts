// Run events, schema toy/v1: one JSON object per line of runs/<id>/events.jsonl (and of
// `toy train --json`). Every event has schema, event and time; the rest depends on the event:
//   run_start   run_id, recipe, model, data, data_format, config, options, seed, backend, versions
//   step        step, loss, lr, grad_norm, tokens, tokens_per_s
//   eval        step, val_loss
//   checkpoint  step, path
//   resume      step, checkpoint (a resumed run continues the same events.jsonl)
//   run_end     steps, final_loss, seconds

import { appendFileSync } from "node:fs";

export const EVENT_SCHEMA = "toy/v1";

export type RunEvent = { event: "run_start" | "resume" | "step" | "eval" | "checkpoint" | "run_end" } & Record<string, unknown>;

export function stamp(e: RunEvent): Record<string, unknown> {
  const { event, ...rest } = e;
  return { schema: EVENT_SCHEMA, event, time: new Date().toISOString(), ...rest };
}

/** Writes each event to events.jsonl (when a path is given) and to `echo` (e.g. stdout for --json). */
export class EventLog {
  constructor(readonly path: string | null, readonly echo?: (line: string) => void) {}
  emit(e: RunEvent): void {
    const line = JSON.stringify(stamp(e));
    if (this.path) appendFileSync(this.path, line + "\n");
    this.echo?.(line);
  }
}
