// GGUF parsing, on bytes in memory (no file system: this module also runs in a browser):
// header, metadata, tensor infos, and tensors as views over the file's bytes.
// Layout (little-endian): magic "GGUF", version u32, tensor count u64, kv count u64, the key/value
// pairs, the tensor infos, padding to `general.alignment`, then the tensor data.
// Every count and length is checked against the bytes that remain before anything is allocated,
// so a truncated or hostile file gives a ModelFileError naming the field, never a crash.

import { ModelFileError } from "../../errors.js";
import { TYPE_TRAITS, typeName } from "./types.js";

export enum GGUFValueType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

/** A metadata value. 64-bit integers become numbers when they are exact, bigints otherwise. */
export type GGUFValue = number | bigint | boolean | string | GGUFValue[] | TypedArrayValue;
type TypedArrayValue = Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | Float32Array | Float64Array;

export interface GGUFTensorInfo {
  name: string;
  /** ggml order: dims[0] is the fastest-varying (the row length). */
  dims: number[];
  type: number;
  /** Offset of the tensor's first byte from the start of the file. */
  offset: number;
  byteLength: number;
}

export interface GGUFHeader {
  version: number;
  metadata: Map<string, GGUFValue>;
  /** The types of metadata values, by key (the writer needs them to round-trip a file). */
  metadataTypes: Map<string, { type: GGUFValueType; itemType?: GGUFValueType }>;
  tensors: GGUFTensorInfo[];
  alignment: number;
  dataOffset: number;
}

export interface GGUFFile extends GGUFHeader {
  path: string;
  /** The whole file (memory-mapped when the native backend is present). */
  bytes: Uint8Array;
  tensor(name: string): GGUFTensorInfo | undefined;
  /** The bytes of one tensor, a view into `bytes` (no copy). */
  tensorBytes(info: GGUFTensorInfo): Uint8Array;
}

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const MAX_DIMS = 4;
const MAX_STRING = 1 << 30;
/** As Node's Buffer decodes: invalid UTF-8 becomes U+FFFD, a leading BOM is kept (a token may be one). */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });
const MIN_VALUE_SIZE: Record<number, number> = {
  [GGUFValueType.UINT8]: 1, [GGUFValueType.INT8]: 1, [GGUFValueType.UINT16]: 2, [GGUFValueType.INT16]: 2,
  [GGUFValueType.UINT32]: 4, [GGUFValueType.INT32]: 4, [GGUFValueType.FLOAT32]: 4, [GGUFValueType.BOOL]: 1,
  [GGUFValueType.STRING]: 8, [GGUFValueType.ARRAY]: 12, [GGUFValueType.UINT64]: 8, [GGUFValueType.INT64]: 8,
  [GGUFValueType.FLOAT64]: 8,
};

/** Raised when the header runs past the bytes given but the file holds more (read more and retry). */
export class NeedMoreBytes extends Error {}

class Cursor {
  pos = 0;
  private view: DataView;
  constructor(private bytes: Uint8Array, private fileSize: number, private path: string) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  fail(what: string): never {
    throw new ModelFileError(printable(`${this.path}: ${what}`, 1000));
  }
  need(n: number, field: string): void {
    if (this.pos + n <= this.bytes.byteLength) return;
    if (this.pos + n <= this.fileSize) throw new NeedMoreBytes();
    this.fail(`truncated file: ${field} needs ${n} bytes at offset ${this.pos}, file has ${this.fileSize}`);
  }
  /** Bytes left in the whole file: the upper bound for any count read from it. */
  remaining(): number {
    return this.fileSize - this.pos;
  }
  u8(f: string) { this.need(1, f); return this.view.getUint8(this.pos++); }
  i8(f: string) { this.need(1, f); return this.view.getInt8(this.pos++); }
  u16(f: string) { this.need(2, f); const v = this.view.getUint16(this.pos, true); this.pos += 2; return v; }
  i16(f: string) { this.need(2, f); const v = this.view.getInt16(this.pos, true); this.pos += 2; return v; }
  u32(f: string) { this.need(4, f); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  i32(f: string) { this.need(4, f); const v = this.view.getInt32(this.pos, true); this.pos += 4; return v; }
  f32(f: string) { this.need(4, f); const v = this.view.getFloat32(this.pos, true); this.pos += 4; return v; }
  f64(f: string) { this.need(8, f); const v = this.view.getFloat64(this.pos, true); this.pos += 8; return v; }
  u64(f: string): bigint { this.need(8, f); const v = this.view.getBigUint64(this.pos, true); this.pos += 8; return v; }
  i64(f: string): bigint { this.need(8, f); const v = this.view.getBigInt64(this.pos, true); this.pos += 8; return v; }
  /** A u64 count that must fit in the rest of the file at `minSize` bytes per item. */
  count(field: string, minSize: number): number {
    const n = this.u64(field);
    if (n * BigInt(Math.max(minSize, 1)) > BigInt(this.remaining())) {
      this.fail(`${field} is ${n}, more than the ${this.remaining()} bytes left in the file can hold`);
    }
    return Number(n);
  }
  string(field: string): string {
    const len = this.count(`length of ${field}`, 1);
    if (len > MAX_STRING) this.fail(`${field} is ${len} bytes long (limit ${MAX_STRING})`);
    this.need(len, field);
    const s = UTF8.decode(this.bytes.subarray(this.pos, this.pos + len));
    this.pos += len;
    return s;
  }
  slice(n: number, field: string): Uint8Array {
    this.need(n, field);
    const s = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
}

/** A name read from the file, fit for a one-line message: control characters escaped, length capped. */
function printable(s: string, max = 120): string {
  const clipped = s.length > max ? `${s.slice(0, max)}… (${s.length} characters)` : s;
  return clipped.replace(/[\x00-\x1f\x7f]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

function bigToNumber(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function readScalar(c: Cursor, type: GGUFValueType, field: string): GGUFValue {
  switch (type) {
    case GGUFValueType.UINT8: return c.u8(field);
    case GGUFValueType.INT8: return c.i8(field);
    case GGUFValueType.UINT16: return c.u16(field);
    case GGUFValueType.INT16: return c.i16(field);
    case GGUFValueType.UINT32: return c.u32(field);
    case GGUFValueType.INT32: return c.i32(field);
    case GGUFValueType.FLOAT32: return c.f32(field);
    case GGUFValueType.BOOL: {
      const b = c.u8(field);
      if (b > 1) c.fail(`${field}: bool value ${b} is neither 0 nor 1`);
      return b === 1;
    }
    case GGUFValueType.STRING: return c.string(field);
    case GGUFValueType.UINT64: return bigToNumber(c.u64(field));
    case GGUFValueType.INT64: return bigToNumber(c.i64(field));
    case GGUFValueType.FLOAT64: return c.f64(field);
    default: return c.fail(`${field}: unknown value type ${type}`);
  }
}

/** Numeric arrays (token scores, token types) come back as typed arrays: compact and fast. */
const TYPED: Partial<Record<GGUFValueType, (n: number) => TypedArrayValue>> = {
  [GGUFValueType.UINT8]: (n) => new Uint8Array(n), [GGUFValueType.INT8]: (n) => new Int8Array(n),
  [GGUFValueType.UINT16]: (n) => new Uint16Array(n), [GGUFValueType.INT16]: (n) => new Int16Array(n),
  [GGUFValueType.UINT32]: (n) => new Uint32Array(n), [GGUFValueType.INT32]: (n) => new Int32Array(n),
  [GGUFValueType.FLOAT32]: (n) => new Float32Array(n), [GGUFValueType.FLOAT64]: (n) => new Float64Array(n),
};

function readValue(c: Cursor, type: GGUFValueType, field: string, depth = 0): GGUFValue {
  if (type !== GGUFValueType.ARRAY) return readScalar(c, type, field);
  if (depth > 8) c.fail(`${field}: arrays nested deeper than 8 levels`);
  const itemType = c.u32(`${field} (array item type)`) as GGUFValueType;
  const minSize = MIN_VALUE_SIZE[itemType];
  if (minSize === undefined) c.fail(`${field}: unknown array item type ${itemType}`);
  const n = c.count(`${field} (array length)`, minSize);
  const make = TYPED[itemType];
  if (make) {
    const out = make(n);
    for (let i = 0; i < n; i++) out[i] = readScalar(c, itemType, field) as number;
    return out;
  }
  const out: GGUFValue[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = readValue(c, itemType, field, depth + 1);
  return out;
}

export function parseHeader(bytes: Uint8Array, fileSize: number, path: string): GGUFHeader {
  const c = new Cursor(bytes, fileSize, path);
  if (fileSize < 4 || bytes.byteLength < 4) c.fail(`not a GGUF file: ${fileSize} bytes, too short for the magic`);
  const magic = c.u32("magic");
  if (magic !== MAGIC) c.fail(`not a GGUF file: magic is 0x${magic.toString(16).padStart(8, "0")}, expected 0x46554747 ("GGUF")`);
  const version = c.u32("version");
  if (version !== 2 && version !== 3) c.fail(`unsupported GGUF version ${version} (supported: 2, 3)`);
  // A tensor info takes at least 8 (name) + 4 (n_dims) + 4 (type) + 8 (offset) bytes; a kv at least 8 + 4 + 1.
  const tensorCount = c.count("tensor count", 24);
  const kvCount = c.count("metadata count", 13);

  const metadata = new Map<string, GGUFValue>();
  const metadataTypes = new Map<string, { type: GGUFValueType; itemType?: GGUFValueType }>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.string(`metadata key #${i}`);
    const label = printable(key);
    const type = c.u32(`type of metadata ${label}`) as GGUFValueType;
    if (MIN_VALUE_SIZE[type] === undefined) c.fail(`metadata ${label}: unknown value type ${type}`);
    const itemPos = c.pos;
    const value = readValue(c, type, `metadata ${label}`);
    let itemType: GGUFValueType | undefined;
    if (type === GGUFValueType.ARRAY) itemType = new DataView(bytes.buffer, bytes.byteOffset + itemPos, 4).getUint32(0, true);
    if (metadata.has(key)) c.fail(`metadata key ${label} appears twice`);
    metadata.set(key, value);
    metadataTypes.set(key, { type, itemType });
  }

  const alignValue = metadata.get("general.alignment") ?? 32;
  if (typeof alignValue !== "number" || !Number.isInteger(alignValue) || alignValue <= 0 || (alignValue & (alignValue - 1)) !== 0 || alignValue > 1 << 20) {
    c.fail(`general.alignment is ${String(alignValue)}, expected a power of two`);
  }
  const alignment = alignValue as number;

  const infos: { name: string; dims: number[]; type: number; rel: bigint }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = c.string(`name of tensor #${i}`);
    const label = printable(name);
    const nDims = c.u32(`tensor ${label}: number of dimensions`);
    if (nDims < 1 || nDims > MAX_DIMS) c.fail(`tensor ${label}: ${nDims} dimensions (expected 1 to ${MAX_DIMS})`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) {
      const n = c.u64(`tensor ${label}: dimension ${d}`);
      if (n === 0n || n > BigInt(fileSize) * 4n) c.fail(`tensor ${label}: dimension ${d} is ${n}, impossible for a ${fileSize}-byte file`);
      dims.push(Number(n));
    }
    const type = c.u32(`tensor ${label}: type`);
    const traits = TYPE_TRAITS.get(type) ?? c.fail(`tensor ${label}: unsupported storage type ${typeName(type)}`);
    if (dims[0] % traits.blockSize !== 0) c.fail(`tensor ${label}: row length ${dims[0]} is not a multiple of the ${traits.name} block size ${traits.blockSize}`);
    const rel = c.u64(`tensor ${label}: offset`);
    if (names.has(name)) c.fail(`tensor ${label} appears twice`);
    names.add(name);
    infos.push({ name, dims, type, rel });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;

  const tensors: GGUFTensorInfo[] = infos.map(({ name, dims, type, rel }) => {
    const traits = TYPE_TRAITS.get(type)!;
    let count = 1n;
    for (const d of dims) count *= BigInt(d);
    const byteLength = (count / BigInt(traits.blockSize)) * BigInt(traits.typeSize);
    const start = BigInt(dataOffset) + rel;
    if (rel % BigInt(alignment) !== 0n) c.fail(`tensor ${printable(name)}: offset ${rel} is not a multiple of the alignment ${alignment}`);
    if (start + byteLength > BigInt(fileSize)) {
      c.fail(`tensor ${printable(name)}: data [${start}, ${start + byteLength}) runs past the end of the file (${fileSize} bytes)`);
    }
    return { name, dims, type, offset: Number(start), byteLength: Number(byteLength) };
  });
  return { version, metadata, metadataTypes, tensors, alignment, dataOffset };
}

/** Parse a GGUF held in memory. */
export function parseGGUF(bytes: Uint8Array, path = "<memory>"): GGUFFile {
  let header: GGUFHeader;
  try {
    header = parseHeader(bytes, bytes.byteLength, path);
  } catch (e) {
    if (e instanceof NeedMoreBytes) throw new ModelFileError(`${path}: truncated file`);
    throw e;
  }
  return withTensors(header, bytes, path);
}

export function withTensors(header: GGUFHeader, bytes: Uint8Array, path: string): GGUFFile {
  const byName = new Map(header.tensors.map((t) => [t.name, t]));
  return {
    ...header,
    path,
    bytes,
    tensor: (name) => byName.get(name),
    tensorBytes: (info) => bytes.subarray(info.offset, info.offset + info.byteLength),
  };
}
