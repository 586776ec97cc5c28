// Pre-tokenized training data: a flat file of little-endian token ids, uint16 (nanoGPT's
// train.bin convention) or uint32 (vocabularies past 65,536), with no header.
// The file is memory-mapped when a mapper is given (the native backend's), else read once; the
// ids are a typed-array view over those bytes, never copied or widened, so a file of a billion
// uint16 ids costs its 2 GB of (mapped, evictable) pages and no more. Windows are widened to
// Int32 one at a time when a batch is cut (windows.ts).

import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";
import { endianness } from "node:os";
import { ToyError, UsageError } from "../../errors.js";

export type TokenWidth = "u16" | "u32";
export const TOKEN_WIDTHS: readonly TokenWidth[] = ["u16", "u32"];
const BYTES: Record<TokenWidth, number> = { u16: 2, u32: 4 };

/** The bytes of a file: memory-mapped (e.g. the cpu backend's mapFile) or read. */
export type FileMapper = (path: string) => Uint8Array;

function readBytes(path: string): Uint8Array {
  let fd: number;
  try { fd = openSync(path, "r"); } catch (e) { throw new ToyError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
  try {
    const size = fstatSync(fd).size;
    const bytes = new Uint8Array(size); // offset 0: aligned for a Uint32Array view
    for (let off = 0; off < size;) {
      const n = readSync(fd, bytes, off, Math.min(size - off, 1 << 30), off);
      if (n <= 0) throw new ToyError(`${path}: the file shrank while it was read`);
      off += n;
    }
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/** Byte-swap a copy of the ids on a big-endian host (the file is little-endian by definition). */
function fromLittleEndian(bytes: Uint8Array, width: TokenWidth): Uint16Array | Uint32Array {
  const n = bytes.byteLength / BYTES[width], view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (width === "u16") return Uint16Array.from({ length: n }, (_, i) => view.getUint16(2 * i, true));
  return Uint32Array.from({ length: n }, (_, i) => view.getUint32(4 * i, true));
}

function fileBytes(path: string, map?: FileMapper): Uint8Array {
  let size: number;
  try { size = statSync(path).size; } catch (e) { throw new ToyError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? e})`); }
  if (size === 0) return new Uint8Array(0); // nothing to map (mmap refuses a length of 0)
  if (!map) return readBytes(path);
  try { return map(path); } catch (e) { throw new ToyError(`${path}: cannot read (${(e as Error).message})`); }
}

/**
 * The ids of a pre-tokenized file, checked: its size is a whole number of ids, and every id is
 * below the model's vocabulary size (the first one that is not is named with its position).
 */
export function readTokenFile(path: string, width: TokenWidth, nVocab: number, map?: FileMapper): Uint16Array | Uint32Array {
  const bytes = fileBytes(path, map);
  const w = BYTES[width];
  if (bytes.byteLength % w !== 0) {
    throw new UsageError(`--data ${path}: ${bytes.byteLength} bytes is not a whole number of ${width} token ids (${w} bytes each); is --data-format right?`);
  }
  const ids = endianness() === "LE" && bytes.byteOffset % w === 0
    ? (width === "u16" ? new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2) : new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4))
    : fromLittleEndian(bytes, width);
  // One pass over the file, so a wrong width or a file for another tokenizer fails before training.
  if (width === "u32" || nVocab < 65536) {
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] >= nVocab) {
        throw new UsageError(`--data ${path}: token id ${ids[i]} at token ${i} (byte offset ${i * w}) is not below the model's vocabulary size ${nVocab}; is the file for this model's tokenizer, and is --data-format right?`);
      }
    }
  }
  return ids;
}
