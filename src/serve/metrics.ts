// GET /metrics: what a Prometheus server scrapes from `toy serve`, through prom-client (one
// registry per server, so two servers in one process do not mix their numbers).
// docs/serve.md lists every metric.

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Scheduler } from "./scheduler.js";

export interface ServeMetrics {
  registry: Registry;
  /** An HTTP request answered (or ended): its route (as matched, so bounded) and status. */
  request(route: string, status: number): void;
  /** A generation ended: its tokens (cached: not computed; shared: of those, copied from another slot) and why it ended. */
  generation(promptTokens: number, cachedTokens: number, sharedTokens: number, generatedTokens: number, finishReason: string): void;
  /** Seconds from the request's arrival to its first generated token. */
  firstToken(seconds: number): void;
  /** Seconds between two tokens of one answer. */
  nextToken(seconds: number): void;
}

export function serveMetrics(scheduler: Scheduler, model: string): ServeMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ model });
  collectDefaultMetrics({ register: registry }); // process CPU, memory, event-loop lag

  const requests = new Counter({ name: "toy_http_requests_total", help: "HTTP requests answered, by route and status", labelNames: ["route", "status"], registers: [registry] });
  const generations = new Counter({ name: "toy_generations_total", help: "Generations ended, by finish reason (stop, length, aborted)", labelNames: ["finish_reason"], registers: [registry] });
  const promptTokens = new Counter({ name: "toy_prompt_tokens_total", help: "Prompt tokens of ended generations", registers: [registry] });
  const cachedTokens = new Counter({ name: "toy_prompt_tokens_cached_total", help: "Prompt tokens found in a slot's KV cache or copied from another slot's (not computed again)", registers: [registry] });
  const sharedTokens = new Counter({ name: "toy_prompt_tokens_shared_total", help: "Of the cached prompt tokens, those copied from another slot's KV cache", registers: [registry] });
  const generated = new Counter({ name: "toy_generated_tokens_total", help: "Tokens generated", registers: [registry] });
  const ttft = new Histogram({
    name: "toy_time_to_first_token_seconds", help: "From a request's arrival to its first generated token",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry],
  });
  const perToken = new Histogram({
    name: "toy_time_per_output_token_seconds", help: "Between two generated tokens of one answer",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [registry],
  });
  const gauge = (name: string, help: string, value: () => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(value()); } });
  gauge("toy_queue_depth", "Requests waiting for a slot", () => scheduler.stats().queued);
  gauge("toy_queue_capacity", "Requests that may wait (--queue)", () => scheduler.opts.queueSize);
  gauge("toy_slots", "Slots (--parallel)", () => scheduler.opts.parallel);
  gauge("toy_slots_busy", "Slots holding a request", () => scheduler.stats().slots_busy);
  gauge("toy_kv_cache_positions_used", "KV-cache positions filled by the running requests", () => scheduler.cacheUse().busy);
  gauge("toy_kv_cache_positions_kept", "KV-cache positions filled, including prefixes kept in idle slots for reuse", () => scheduler.cacheUse().kept);
  gauge("toy_kv_cache_positions", "KV-cache positions in all slots (--parallel × --ctx)", () => scheduler.cacheUse().capacity);
  gauge("toy_kv_cache_usage_ratio", "Used / all KV-cache positions", () => { const u = scheduler.cacheUse(); return u.busy / u.capacity; });
  gauge("toy_draining", "1 while the server drains (after SIGTERM), else 0", () => (scheduler.isDraining ? 1 : 0));

  return {
    registry,
    request: (route, status) => requests.inc({ route, status: String(status) }),
    generation(p, cached, shared, g, reason) {
      generations.inc({ finish_reason: reason });
      promptTokens.inc(p);
      cachedTokens.inc(cached);
      sharedTokens.inc(shared);
      generated.inc(g);
    },
    firstToken: (s) => ttft.observe(s),
    nextToken: (s) => perToken.observe(s),
  };
}
