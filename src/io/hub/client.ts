// Talking to the Hugging Face hub: where it is ($HF_ENDPOINT), who we are ($HF_TOKEN, else the
// token file `huggingface-cli login` writes), a file's metadata from its resolve URL, a repo's
// file list, and the hub's error answers turned into messages that say what to do.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ToyError } from "../../errors.js";
import { hfHome } from "../discovery/hf.js";
import { env } from "../discovery/source.js";

export const DEFAULT_ENDPOINT = "https://huggingface.co";

export function hubEndpoint(): string {
  return (env("HF_ENDPOINT") ?? DEFAULT_ENDPOINT).replace(/\/+$/, "");
}

export function hubToken(): string | undefined {
  const t = env("HF_TOKEN") ?? env("HUGGING_FACE_HUB_TOKEN");
  if (t) return t;
  try { return readFileSync(env("HF_TOKEN_PATH") ?? join(hfHome(), "token"), "utf8").trim() || undefined; } catch { return undefined; }
}

/** A failed hub request (exit 1): the HTTP status and the hub's x-error-code when there was an answer. */
export class HubError extends ToyError {
  constructor(message: string, readonly status?: number, readonly code?: string, readonly network = false) {
    super(message);
    this.name = "HubError";
  }
}

export interface HubContext {
  endpoint: string;
  token?: string;
  repo: string;
  file?: string;
  revision: string;
}

const encodePath = (p: string) => p.split("/").map(encodeURIComponent).join("/");

/** {endpoint}/{repo}/resolve/{revision}/{file} */
export function resolveUrl(ctx: HubContext & { file: string }): string {
  return `${ctx.endpoint}/${encodePath(ctx.repo)}/resolve/${encodeURIComponent(ctx.revision)}/${encodePath(ctx.file)}`;
}

export function authHeaders(ctx: HubContext, url: string): Record<string, string> {
  // The token goes to the hub only, never to the storage host a download is redirected to.
  return ctx.token && new URL(url).origin === new URL(ctx.endpoint).origin ? { authorization: `Bearer ${ctx.token}` } : {};
}

/** fetch, with a failure to connect turned into a HubError that names the host. */
export async function request(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e) {
    throw networkError(url, e);
  }
}

/** A request that got no (complete) answer; `what` says how far it got. */
export function networkError(url: string, e: unknown, what?: string): HubError {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (e as Error).message ?? String(e);
  const host = new URL(url).host;
  const message = what ? `${what} ${host}: ${why}` : `cannot reach ${host}: ${why} (check the network, or set HF_ENDPOINT to a mirror)`;
  return new HubError(message, undefined, undefined, true);
}

/** The hub's error answer as a message that says what went wrong and what to do. */
export function hubError(res: Response, ctx: HubContext): HubError {
  const code = res.headers.get("x-error-code") ?? undefined;
  const said = res.headers.get("x-error-message");
  const what = ctx.file ? `${ctx.repo}/${ctx.file} (revision ${ctx.revision})` : `${ctx.repo} (revision ${ctx.revision})`;
  const page = `${ctx.endpoint}/${ctx.repo}`;
  const tokenHint = ctx.token ? "the token in HF_TOKEN was not accepted for it" : "set HF_TOKEN to an access token (https://huggingface.co/settings/tokens)";
  let msg: string;
  if (code === "RepoNotFound") msg = `repository ${ctx.repo} not found on ${ctx.endpoint} (if it is private or gated, ${tokenHint})`;
  else if (code === "RevisionNotFound") msg = `revision ${ctx.revision} not found in ${ctx.repo}`;
  else if (code === "EntryNotFound") msg = `${ctx.file} not found in ${ctx.repo} at revision ${ctx.revision}`;
  else if (code === "GatedRepo") msg = `${ctx.repo} is gated: accept its conditions at ${page}${ctx.token ? " with the account of your HF_TOKEN" : ", then set HF_TOKEN"}`;
  else if (res.status === 401) msg = `401 Unauthorized for ${what}: ${tokenHint}`;
  else if (res.status === 403) msg = `403 Forbidden for ${what}: ${ctx.token ? "your token has no access to it" : "it needs access; set HF_TOKEN"}`;
  else if (res.status === 404) msg = `404 Not Found: ${what}`;
  else if (res.status === 429) msg = `429 Too Many Requests from ${ctx.endpoint}: wait a while and try again${ctx.token ? "" : " (an HF_TOKEN raises the limit)"}`;
  else if (res.status >= 500) msg = `the hub answered ${res.status} ${res.statusText} for ${what}: try again later`;
  else msg = `the hub answered ${res.status} ${res.statusText} for ${what}`;
  return new HubError(said && !msg.includes(said) ? `${msg} (hub: ${said})` : msg, res.status, code);
}

/** What the hub says about a file before it is downloaded. */
export interface FileMetadata {
  /** Where the bytes are (the storage URL the hub redirects to, or the resolve URL itself). */
  downloadUrl: string;
  commit?: string;
  /** The ETag, unquoted: sha256 of the content for LFS files, git's blob sha1 for others. */
  etag?: string;
  size?: number;
}

/** HEAD the resolve URL, following only the hub's own (same-host) redirects, such as a renamed repo. */
export async function fileMetadata(ctx: HubContext & { file: string }): Promise<FileMetadata> {
  let url = resolveUrl(ctx);
  for (let hop = 0; hop < 10; hop++) {
    const res = await request(url, { method: "HEAD", redirect: "manual", headers: { ...authHeaders(ctx, url), "accept-encoding": "identity" } });
    const location = res.headers.get("location");
    const redirect = res.status >= 300 && res.status < 400 && location ? new URL(location, url).href : undefined;
    if (redirect && !res.headers.has("x-linked-size") && new URL(redirect).origin === new URL(url).origin) { url = redirect; continue; }
    if (!redirect && !res.ok) throw hubError(res, ctx);
    const etag = res.headers.get("x-linked-etag") ?? res.headers.get("etag") ?? undefined;
    const size = res.headers.get("x-linked-size") ?? res.headers.get("content-length") ?? undefined;
    return {
      downloadUrl: redirect ?? url,
      commit: res.headers.get("x-repo-commit") ?? undefined,
      etag: etag?.replace(/^W\//, "").replace(/^"|"$/g, ""),
      size: size !== undefined && /^\d+$/.test(size) ? Number(size) : undefined,
    };
  }
  throw new HubError(`too many redirects resolving ${resolveUrl(ctx)}`);
}

/** The files of a model repo, from {endpoint}/api/models/{repo}[/revision/{rev}]. */
export async function repoFiles(ctx: HubContext): Promise<string[]> {
  const url = `${ctx.endpoint}/api/models/${encodePath(ctx.repo)}${ctx.revision === "main" ? "" : `/revision/${encodeURIComponent(ctx.revision)}`}`;
  const res = await request(url, { headers: { ...authHeaders(ctx, url), accept: "application/json" } });
  if (!res.ok) throw hubError(res, ctx);
  let info: { siblings?: { rfilename?: unknown }[] };
  try { info = (await res.json()) as typeof info; } catch (e) { throw new HubError(`${url}: the answer is not JSON (${(e as Error).message})`); }
  if (!Array.isArray(info.siblings)) throw new HubError(`${url}: the answer has no file list (siblings)`);
  return info.siblings.map((s) => s.rfilename).filter((f): f is string => typeof f === "string");
}
