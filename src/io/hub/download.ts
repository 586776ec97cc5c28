// Downloading one file from the hub into a folder: resumable (a `.part` file continued with an
// HTTP range request, on the next try or the next run), verified (size, and sha256 for LFS files
// or git's blob sha1 for small ones, against the hub's headers), and atomic (the file appears under
// its name only when it is complete and verified).

import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, renameSync, statSync, truncateSync, unlinkSync } from "node:fs";
import { open } from "node:fs/promises";
import { basename, join } from "node:path";
import { authHeaders, fileMetadata, hubEndpoint, HubError, hubError, hubToken, networkError, request, type FileMetadata, type HubContext } from "./client.js";

export interface DownloadOptions {
  repo: string;
  file: string;
  revision?: string;
  /** The folder to download into (made if missing). */
  dir: string;
  endpoint?: string;
  token?: string;
  /** How many times to resume after the connection drops (default 3). */
  retries?: number;
  onProgress?: (done: number, total: number | undefined) => void;
  log?: (message: string) => void;
}

export interface DownloadResult {
  repo: string;
  file: string;
  revision: string;
  commit?: string;
  path: string;
  size_bytes: number;
  /** sha256 of the file (always computed). */
  sha256: string;
  /** What the hub's headers let us check: "sha256", "sha1" (git blob) or "size". */
  verified: "sha256" | "sha1" | "size";
  /** Bytes that were already in the `.part` file when the download started. */
  resumed_from: number;
  already_present: boolean;
}

export async function downloadFile(opts: DownloadOptions): Promise<DownloadResult> {
  const ctx: HubContext & { file: string } = {
    endpoint: (opts.endpoint ?? hubEndpoint()).replace(/\/+$/, ""),
    token: opts.token ?? hubToken(),
    repo: opts.repo, file: opts.file, revision: opts.revision ?? "main",
  };
  const log = opts.log ?? (() => {});
  const meta = await fileMetadata(ctx);
  mkdirSync(opts.dir, { recursive: true });
  const dest = join(opts.dir, basename(opts.file));
  const part = `${dest}.part`;
  const result = (path: string, sha256: string, verified: DownloadResult["verified"], resumedFrom: number, already: boolean): DownloadResult => ({
    repo: ctx.repo, file: ctx.file, revision: ctx.revision, commit: meta.commit, path, size_bytes: statSync(path).size,
    sha256, verified, resumed_from: resumedFrom, already_present: already,
  });

  if (existsSync(dest)) {
    const check = await verify(dest, meta);
    if (check.ok) { log(`${dest} is already here and matches the hub`); return result(dest, check.sha256, check.verified, 0, true); }
    log(`${dest} differs from the hub's ${ctx.file} (${check.why}); downloading it again`);
  }

  const resumedFrom = existsSync(part) ? statSync(part).size : 0;
  const retries = opts.retries ?? 3;
  for (let attempt = 0; ; attempt++) {
    try {
      await fetchInto(part, meta, ctx, opts.onProgress, log);
      break;
    } catch (e) {
      if (!(e instanceof HubError && e.network) || attempt >= retries) {
        if (e instanceof HubError && e.network && existsSync(part)) {
          throw new HubError(`${e.message}; ${statSync(part).size} bytes are kept in ${part}, run the same command again to resume`, e.status, e.code, true);
        }
        throw e;
      }
      log(`${e.message}; resuming (${attempt + 1} of ${retries})`);
    }
  }

  const check = await verify(part, meta);
  if (!check.ok) {
    unlinkSync(part);
    throw new HubError(`${ctx.repo}/${ctx.file}: ${check.why}; the download was discarded, run the command again to retry`);
  }
  renameSync(part, dest); // atomic: the name appears only for a complete, verified file
  return result(dest, check.sha256, check.verified, resumedFrom, false);
}

/** Append the missing bytes to `part`, asking for a range when some are there already. */
async function fetchInto(part: string, meta: FileMetadata, ctx: HubContext, onProgress: DownloadOptions["onProgress"], log: (m: string) => void): Promise<void> {
  let have = existsSync(part) ? statSync(part).size : 0;
  if (meta.size !== undefined && have > meta.size) { log(`${part} is longer than the file; starting over`); truncateSync(part, 0); have = 0; }
  if (meta.size !== undefined && have === meta.size) return;
  const url = meta.downloadUrl;
  const headers: Record<string, string> = { ...authHeaders(ctx, url), "accept-encoding": "identity" };
  if (have > 0) headers.range = `bytes=${have}-`;
  const res = await request(url, { headers, redirect: "follow" });
  if (res.status === 416 && have > 0) { // the range is past the end: the partial file is no good
    await res.body?.cancel();
    truncateSync(part, 0);
    return fetchInto(part, meta, ctx, onProgress, log);
  }
  if (!res.ok || !res.body) throw hubError(res, ctx);
  if (have > 0) {
    const start = /^bytes (\d+)-/.exec(res.headers.get("content-range") ?? "")?.[1];
    if (res.status !== 206 || Number(start) !== have) { log("the server does not resume downloads; starting over"); have = 0; }
    else log(`resuming at byte ${have}`);
  }
  const total = meta.size ?? (res.headers.get("content-length") ? have + Number(res.headers.get("content-length")) : undefined);
  const out = await open(part, have > 0 ? "a" : "w");
  let done = have;
  try {
    onProgress?.(done, total);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      await out.write(chunk);
      done += chunk.byteLength;
      onProgress?.(done, total);
    }
  } catch (e) {
    throw networkError(url, e, `the connection dropped after ${done}${total !== undefined ? ` of ${total}` : ""} bytes from`);
  } finally {
    await out.close();
  }
}

type Check = { ok: true; sha256: string; verified: DownloadResult["verified"] } | { ok: false; why: string };

/** Size, then sha256 (LFS etag) or git blob sha1 (plain etag), as far as the headers tell. */
async function verify(path: string, meta: FileMetadata): Promise<Check> {
  const size = statSync(path).size;
  if (meta.size !== undefined && size !== meta.size) return { ok: false, why: `size mismatch: got ${size} bytes, the hub says ${meta.size}` };
  const sha256 = createHash("sha256");
  const sha1 = createHash("sha1").update(`blob ${size}\0`);
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) { sha256.update(chunk as Buffer); sha1.update(chunk as Buffer); }
  const got256 = sha256.digest("hex");
  const etag = meta.etag?.toLowerCase();
  if (etag && /^[0-9a-f]{64}$/.test(etag)) {
    return etag === got256 ? { ok: true, sha256: got256, verified: "sha256" } : { ok: false, why: `sha256 mismatch: got ${got256}, the hub says ${etag}` };
  }
  if (etag && /^[0-9a-f]{40}$/.test(etag)) {
    const got1 = sha1.digest("hex");
    return etag === got1 ? { ok: true, sha256: got256, verified: "sha1" } : { ok: false, why: `git sha1 mismatch: got ${got1}, the hub says ${etag}` };
  }
  return { ok: true, sha256: got256, verified: "size" };
}
