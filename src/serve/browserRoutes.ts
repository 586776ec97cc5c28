// What the chat page needs to run the model in the browser (its "this browser (WebGPU)" mode):
//   GET /toy-browser.js            the in-browser model (src/browser/, bundled by
//                                  scripts/bundle-browser.mjs into dist/browser/)
//   GET /v1/models/{id}/gguf       the model file itself, streamed from disk
// The model file is served only when `toy serve --serve-weights` asks for it: serving a
// server's weights to anyone who can reach it is a choice the operator makes, not a default.
// It sits under /v1, so an --api-key protects it like the rest of the API.

import { createReadStream, existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { notFound } from "./errors.js";

/** dist/src/serve/browserRoutes.js → dist/browser/toy-browser.js */
const BUNDLE = fileURLToPath(new URL("../../browser/toy-browser.js", import.meta.url));

/** The routes that need no API key (the page loads the bundle before it knows one). */
export const OPEN_BROWSER_ROUTES = ["/toy-browser.js"];

export interface BrowserRouteOptions {
  /** The model id the server serves. */
  name: string;
  /** The GGUF to send at /v1/models/{id}/gguf; undefined: not served (404 saying how to enable it). */
  weightsPath?: string;
}

export function registerBrowserRoutes(app: FastifyInstance, opts: BrowserRouteOptions): void {
  app.get("/toy-browser.js", async (_req, reply) => {
    if (!existsSync(BUNDLE)) throw notFound("the in-browser model was not built (npm run build makes dist/browser/toy-browser.js; it needs the esbuild devDependency)", null, "not_built");
    return reply.type("text/javascript; charset=utf-8").header("content-length", statSync(BUNDLE).size).send(createReadStream(BUNDLE));
  });
  app.get<{ Params: { model: string } }>("/v1/models/:model/gguf", async (req, reply) => {
    if (req.params.model !== opts.name) throw notFound(`the model "${req.params.model}" does not exist; this server serves "${opts.name}"`, "model", "model_not_found");
    if (opts.weightsPath === undefined) throw notFound("this server does not send its model file: start it with toy serve --serve-weights", null, "weights_not_served");
    const size = statSync(opts.weightsPath).size;
    return reply.type("application/octet-stream")
      .header("content-length", size)
      .header("content-disposition", `attachment; filename="${encodeURIComponent(opts.name)}.gguf"`)
      .send(createReadStream(opts.weightsPath));
  });
}
