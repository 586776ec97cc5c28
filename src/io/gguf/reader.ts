// GGUF files on disk: read the header only (listing models) or the whole file (memory-mapped
// when the native backend installs a mapper). The parsing itself is parse.ts (bytes in memory).

import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { ModelFileError } from "../../errors.js";
import { fileMapper } from "./fileMapper.js";
import { NeedMoreBytes, parseHeader, withTensors, type GGUFHeader, type GGUFFile } from "./parse.js";

export * from "./parse.js";
export { setFileMapper, type FileMapper } from "./fileMapper.js";

/** Read only the header of a GGUF file (metadata and tensor infos): fast, for listing models. */
export function readGGUFHeader(path: string): GGUFHeader {
  const fd = openFile(path);
  try {
    const size = fstatSync(fd).size;
    let chunk = Math.min(size, 1 << 20);
    for (;;) {
      const buf = new Uint8Array(chunk);
      const got = readSync(fd, buf, 0, chunk, 0);
      try {
        return parseHeader(buf.subarray(0, got), size, path);
      } catch (e) {
        if (!(e instanceof NeedMoreBytes)) throw e;
        if (chunk >= size) throw new ModelFileError(`${path}: truncated file (it shrank while being read)`);
        chunk = Math.min(size, chunk * 4);
      }
    }
  } finally {
    closeSync(fd);
  }
}

function openFile(path: string): number {
  try {
    return openSync(path, "r");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ModelFileError(`${path}: cannot open (${code === "ENOENT" ? "no such file" : code ?? String(e)})`);
  }
}


/** Open a GGUF file: the header is parsed, tensors are views over the (mapped or read) bytes. */
export function readGGUF(path: string): GGUFFile {
  const header = readGGUFHeader(path);
  let bytes: Uint8Array;
  const mapper = fileMapper();
  if (mapper) {
    bytes = mapper(path);
  } else {
    const fd = openFile(path);
    try {
      const size = fstatSync(fd).size;
      bytes = new Uint8Array(size);
      let off = 0;
      while (off < size) {
        const n = readSync(fd, bytes, off, Math.min(size - off, 1 << 30), off);
        if (n <= 0) throw new ModelFileError(`${path}: file shrank while reading`);
        off += n;
      }
    } finally {
      closeSync(fd);
    }
  }
  return withTensors(header, bytes, path);
}
