// IDX files, the format MNIST ships in (http://yann.lecun.com/exdb/mnist/), plain or gzipped.
// Layout (big-endian): two zero bytes, a type code, a dimension count n, n dimensions as u32,
// then the values in row-major order (the last dimension varies fastest).
// Gzip is recognised by its magic (1f 8b), not by the file name. Every field is checked against
// the bytes that are there before anything is allocated, so a truncated or hostile file gives a
// DataFileError naming the file and the field, never a crash.

import { readFileSync, statSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { DataFileError } from "../../errors.js";

/** The IDX type codes and the arrays their values are returned in. */
export const IDX_TYPES = {
  0x08: { name: "ubyte", size: 1 },
  0x09: { name: "i8", size: 1 },
  0x0b: { name: "i16", size: 2 },
  0x0c: { name: "i32", size: 4 },
  0x0d: { name: "f32", size: 4 },
  0x0e: { name: "f64", size: 8 },
} as const;
export type IdxTypeCode = keyof typeof IDX_TYPES;
export type IdxArray = Uint8Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;

export interface IdxFile {
  type: IdxTypeCode;
  /** Dimensions, outermost first: MNIST images are [N, rows, cols], labels [N]. */
  dims: number[];
  /** The values in row-major order, native byte order. */
  data: IdxArray;
}

/** Files larger than this (after decompression) are refused: bigger than one Node buffer. */
export const MAX_IDX_BYTES = 2 ** 31 - 1;
const hex = (b: number) => `0x${b.toString(16).padStart(2, "0")}`;

/** Read an IDX file, plain or gzip-compressed. */
export function readIdx(path: string): IdxFile {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new DataFileError(`${path}: cannot open (${code === "ENOENT" ? "no such file" : code ?? String(e)})`);
  }
  if (size > MAX_IDX_BYTES) throw new DataFileError(`${path}: file size ${size} bytes: expected at most ${MAX_IDX_BYTES}`);
  return parseIdx(readFileSync(path), path);
}

/** Parse the bytes of an IDX file (gunzipping them first when they start with the gzip magic). */
export function parseIdx(bytes: Uint8Array, path = "<idx>"): IdxFile {
  const fail = (what: string): never => { throw new DataFileError(`${path}: ${what}`); };
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: MAX_IDX_BYTES });
    } catch (e) {
      fail(`gzip stream: cannot decompress (${(e as Error).message})`);
    }
  }
  if (bytes.length < 4) fail(`truncated file: the header needs 4 bytes, file has ${bytes.length}`);
  if (bytes[0] !== 0 || bytes[1] !== 0) {
    fail(`magic: expected 00 00 <type> <dims>, found ${[...bytes.subarray(0, 4)].map((b) => b.toString(16).padStart(2, "0")).join(" ")} (not an IDX file)`);
  }
  const code = bytes[2];
  if (!(code in IDX_TYPES)) {
    fail(`type code ${hex(code)}: expected one of ${Object.entries(IDX_TYPES).map(([c, t]) => `${hex(Number(c))} (${t.name})`).join(", ")}`);
  }
  const type = code as IdxTypeCode;
  const nDims = bytes[3];
  if (nDims === 0) fail("dimension count 0: expected at least 1");
  const headerBytes = 4 + 4 * nDims;
  if (bytes.length < headerBytes) fail(`truncated header: ${nDims} dimensions need ${headerBytes} bytes, file has ${bytes.length}`);

  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims: number[] = [];
  const { size, name } = IDX_TYPES[type];
  const available = bytes.length - headerBytes;
  let count = 1;
  for (let i = 0; i < nDims; i++) {
    const d = view.getUint32(4 + 4 * i, false);
    dims.push(d);
    count *= d;
    // Checked as we go, so absurd dimensions cannot overflow the product or reach an allocation.
    if (count * size > available) {
      fail(`truncated data: dimension ${i} is ${d}, so dims [${dims.join(", ")}${i + 1 < nDims ? ", …" : ""}] of ${name} need at least ${count * size} bytes after the ${headerBytes}-byte header, file has ${available}`);
    }
  }
  if (count * size !== available) {
    fail(`data length: dims [${dims.join(", ")}] of ${name} need ${count * size} bytes after the ${headerBytes}-byte header, file has ${available} (${available - count * size} extra)`);
  }
  return { type, dims, data: decodeValues(view, headerBytes, count, type) };
}

/** The values as a native array (IDX stores them big-endian). */
function decodeValues(view: DataView, offset: number, count: number, type: IdxTypeCode): IdxArray {
  switch (type) {
    case 0x08: return new Uint8Array(view.buffer, view.byteOffset + offset, count).slice();
    case 0x09: return new Int8Array(view.buffer, view.byteOffset + offset, count).slice();
    case 0x0b: { const a = new Int16Array(count); for (let i = 0; i < count; i++) a[i] = view.getInt16(offset + 2 * i, false); return a; }
    case 0x0c: { const a = new Int32Array(count); for (let i = 0; i < count; i++) a[i] = view.getInt32(offset + 4 * i, false); return a; }
    case 0x0d: { const a = new Float32Array(count); for (let i = 0; i < count; i++) a[i] = view.getFloat32(offset + 4 * i, false); return a; }
    case 0x0e: { const a = new Float64Array(count); for (let i = 0; i < count; i++) a[i] = view.getFloat64(offset + 8 * i, false); return a; }
  }
}

/** The bytes of an IDX file holding `data` with dimensions `dims` (the type follows the array). */
export function encodeIdx(data: IdxArray, dims: number[]): Uint8Array {
  const type = typeOf(data);
  const count = dims.reduce((a, b) => a * b, 1);
  if (count !== data.length) throw new RangeError(`encodeIdx: dims [${dims.join(", ")}] hold ${count} values, the array has ${data.length}`);
  if (dims.length === 0 || dims.length > 255) throw new RangeError(`encodeIdx: ${dims.length} dimensions (expected 1 to 255)`);
  const header = 4 + 4 * dims.length, size = IDX_TYPES[type].size;
  const out = new Uint8Array(header + count * size);
  const view = new DataView(out.buffer);
  out[2] = type; out[3] = dims.length;
  dims.forEach((d, i) => view.setUint32(4 + 4 * i, d, false));
  for (let i = 0; i < count; i++) {
    const at = header + i * size, v = data[i];
    switch (type) {
      case 0x08: view.setUint8(at, v); break;
      case 0x09: view.setInt8(at, v); break;
      case 0x0b: view.setInt16(at, v, false); break;
      case 0x0c: view.setInt32(at, v, false); break;
      case 0x0d: view.setFloat32(at, v, false); break;
      case 0x0e: view.setFloat64(at, v, false); break;
    }
  }
  return out;
}

function typeOf(data: IdxArray): IdxTypeCode {
  if (data instanceof Uint8Array) return 0x08;
  if (data instanceof Int8Array) return 0x09;
  if (data instanceof Int16Array) return 0x0b;
  if (data instanceof Int32Array) return 0x0c;
  if (data instanceof Float32Array) return 0x0d;
  return 0x0e;
}
