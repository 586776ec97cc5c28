// Atomic file writes: a temporary file beside the target, fsync, rename. A reader (or a run
// killed at any moment) sees the old file or the new one, never half of one.

import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname } from "node:path";

export function writeFileAtomic(path: string, data: string | Uint8Array | readonly Uint8Array[]): void {
  const tmp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    const parts = typeof data === "string" ? [Buffer.from(data, "utf8")] : data instanceof Uint8Array ? [data] : data;
    for (const part of parts) for (let off = 0; off < part.byteLength;) off += writeSync(fd, part, off, part.byteLength - off);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
  syncDir(dirname(path));
}

/** fsync a folder so a rename in it is durable (not possible on every platform: ignored there). */
export function syncDir(dir: string): void {
  try { const fd = openSync(dir, "r"); try { fsyncSync(fd); } finally { closeSync(fd); } } catch { /* e.g. Windows */ }
}
