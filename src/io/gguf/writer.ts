// GGUF writer: the inverse of reader.ts, laid out the way llama.cpp and the gguf Python package
// lay it out, so that reading a file and writing it back gives the same bytes.
// Layout (v3, little-endian): magic "GGUF", version u32, tensor count u64, kv count u64, the
// key/value pairs in order, the tensor infos (offsets relative to the data section, each aligned),
// zero padding to `alignment`, then each tensor's bytes followed by zero padding to `alignment`.

import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname } from "node:path";
import { GGUFValueType, type GGUFValue } from "./reader.js";
import { byteSize, typeName, TYPE_TRAITS } from "./types.js";

/** The type of one metadata value; `itemType` for arrays (nested arrays infer their own items). */
export interface GGUFValueTypeSpec {
  type: GGUFValueType;
  itemType?: GGUFValueType;
}

/** One metadata entry: key, value, and optionally its type (inferred when left out). */
export type GGUFMetadataEntry = [key: string, value: GGUFValue, type?: GGUFValueType, itemType?: GGUFValueType];

export interface GGUFTensorData {
  name: string;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  /** A ggml storage type id (GGMLType). */
  type: number;
  bytes: Uint8Array;
}

export interface GGUFWriteSpec {
  /** Entries in file order, or a Map (insertion order) with optional types, as the reader returns them. */
  metadata: GGUFMetadataEntry[] | Map<string, GGUFValue>;
  metadataTypes?: Map<string, GGUFValueTypeSpec>;
  tensors: GGUFTensorData[];
  /** Data alignment (default 32, or `general.alignment` when the metadata holds it). A value other
   *  than 32 is also written as `general.alignment` (UINT32) unless the metadata already has it. */
  alignment?: number;
  /** GGUF version to write (3 unless told; 2 shares the layout). */
  version?: 2 | 3;
}

const MAGIC = 0x46554747;
const DEFAULT_ALIGNMENT = 32;
const CHUNK = 16 << 20; // tensor data goes to disk in 16 MiB pieces

/** A growable little-endian byte buffer. */
class ByteWriter {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private reserve(n: number): void {
    if (this.length + n <= this.buf.byteLength) return;
    let size = this.buf.byteLength * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number) { this.reserve(1); this.view.setUint8(this.length, v); this.length += 1; }
  i8(v: number) { this.reserve(1); this.view.setInt8(this.length, v); this.length += 1; }
  u16(v: number) { this.reserve(2); this.view.setUint16(this.length, v, true); this.length += 2; }
  i16(v: number) { this.reserve(2); this.view.setInt16(this.length, v, true); this.length += 2; }
  u32(v: number) { this.reserve(4); this.view.setUint32(this.length, v, true); this.length += 4; }
  i32(v: number) { this.reserve(4); this.view.setInt32(this.length, v, true); this.length += 4; }
  f32(v: number) { this.reserve(4); this.view.setFloat32(this.length, v, true); this.length += 4; }
  f64(v: number) { this.reserve(8); this.view.setFloat64(this.length, v, true); this.length += 8; }
  u64(v: bigint) { this.reserve(8); this.view.setBigUint64(this.length, v, true); this.length += 8; }
  i64(v: bigint) { this.reserve(8); this.view.setBigInt64(this.length, v, true); this.length += 8; }
  bytes(b: Uint8Array) { this.reserve(b.byteLength); this.buf.set(b, this.length); this.length += b.byteLength; }
  string(s: string) { const b = Buffer.from(s, "utf8"); this.u64(BigInt(b.byteLength)); this.bytes(b); }
  zeros(n: number) { this.reserve(n); this.buf.fill(0, this.length, this.length + n); this.length += n; }
  result(): Uint8Array { return this.buf.subarray(0, this.length); }
}

const pad = (n: number, align: number) => Math.ceil(n / align) * align;

// ---- type inference -------------------------------------------------------------------------

function inferNumberType(values: ArrayLike<number>): GGUFValueType {
  let allInt = true, min = 0, max = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isInteger(v)) allInt = false;
    else { if (v < min) min = v; if (v > max) max = v; }
  }
  if (!allInt) return GGUFValueType.FLOAT32;
  if (min >= 0) return max <= 0xffffffff ? GGUFValueType.UINT32 : GGUFValueType.UINT64;
  return min >= -0x80000000 && max <= 0x7fffffff ? GGUFValueType.INT32 : GGUFValueType.INT64;
}

function typedArrayItemType(v: ArrayBufferView): GGUFValueType | undefined {
  if (v instanceof Uint8Array) return GGUFValueType.UINT8;
  if (v instanceof Int8Array) return GGUFValueType.INT8;
  if (v instanceof Uint16Array) return GGUFValueType.UINT16;
  if (v instanceof Int16Array) return GGUFValueType.INT16;
  if (v instanceof Uint32Array) return GGUFValueType.UINT32;
  if (v instanceof Int32Array) return GGUFValueType.INT32;
  if (v instanceof Float32Array) return GGUFValueType.FLOAT32;
  if (v instanceof Float64Array) return GGUFValueType.FLOAT64;
  if (v instanceof BigUint64Array) return GGUFValueType.UINT64;
  if (v instanceof BigInt64Array) return GGUFValueType.INT64;
  return undefined;
}

/** The GGUF type a JS value is written as when no type is given. */
export function inferValueType(value: GGUFValue, key = "value"): GGUFValueTypeSpec {
  switch (typeof value) {
    case "boolean": return { type: GGUFValueType.BOOL };
    case "string": return { type: GGUFValueType.STRING };
    case "number": return { type: inferNumberType([value]) };
    case "bigint": return { type: value < 0n ? GGUFValueType.INT64 : GGUFValueType.UINT64 };
  }
  if (ArrayBuffer.isView(value)) {
    const itemType = typedArrayItemType(value);
    if (itemType === undefined) throw new TypeError(`${key}: cannot write a ${value.constructor.name}`);
    return { type: GGUFValueType.ARRAY, itemType };
  }
  if (Array.isArray(value)) return { type: GGUFValueType.ARRAY, itemType: inferItemType(value, key) };
  throw new TypeError(`${key}: cannot write a value of type ${typeof value}`);
}

function inferItemType(items: GGUFValue[], key: string): GGUFValueType {
  if (items.length === 0) return GGUFValueType.INT32; // nothing to go by: llama.cpp reads any empty array
  const kinds = new Set(items.map((v) => (Array.isArray(v) || ArrayBuffer.isView(v) ? "array" : typeof v)));
  if (kinds.size !== 1) throw new TypeError(`${key}: array mixes ${[...kinds].join(" and ")} items`);
  const kind = [...kinds][0];
  if (kind === "number") return inferNumberType(items as number[]);
  if (kind === "bigint") return (items as bigint[]).some((v) => v < 0n) ? GGUFValueType.INT64 : GGUFValueType.UINT64;
  return inferValueType(items[0], key).type;
}

// ---- value encoding -------------------------------------------------------------------------

function asNumber(v: GGUFValue, key: string): number {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "boolean") return v ? 1 : 0;
  throw new TypeError(`${key}: expected a number, got ${typeof v}`);
}

function asInteger(v: GGUFValue, key: string, min: number, max: number): number {
  const n = asNumber(v, key);
  if (!Number.isInteger(n) || n < min || n > max) throw new RangeError(`${key}: ${n} is not an integer in [${min}, ${max}]`);
  return n;
}

function asBigInt(v: GGUFValue, key: string, unsigned: boolean): bigint {
  let b: bigint;
  if (typeof v === "bigint") b = v;
  else if (typeof v === "number" && Number.isInteger(v)) b = BigInt(v);
  else throw new TypeError(`${key}: expected an integer, got ${String(v)}`);
  const ok = unsigned ? b >= 0n && b < 1n << 64n : b >= -(1n << 63n) && b < 1n << 63n;
  if (!ok) throw new RangeError(`${key}: ${b} does not fit in ${unsigned ? "UINT64" : "INT64"}`);
  return b;
}

function writeValue(w: ByteWriter, value: GGUFValue, type: GGUFValueType, itemType: GGUFValueType | undefined, key: string): void {
  switch (type) {
    case GGUFValueType.UINT8: return w.u8(asInteger(value, key, 0, 0xff));
    case GGUFValueType.INT8: return w.i8(asInteger(value, key, -0x80, 0x7f));
    case GGUFValueType.UINT16: return w.u16(asInteger(value, key, 0, 0xffff));
    case GGUFValueType.INT16: return w.i16(asInteger(value, key, -0x8000, 0x7fff));
    case GGUFValueType.UINT32: return w.u32(asInteger(value, key, 0, 0xffffffff));
    case GGUFValueType.INT32: return w.i32(asInteger(value, key, -0x80000000, 0x7fffffff));
    case GGUFValueType.FLOAT32: return w.f32(asNumber(value, key));
    case GGUFValueType.FLOAT64: return w.f64(asNumber(value, key));
    case GGUFValueType.UINT64: return w.u64(asBigInt(value, key, true));
    case GGUFValueType.INT64: return w.i64(asBigInt(value, key, false));
    case GGUFValueType.BOOL:
      if (typeof value !== "boolean") throw new TypeError(`${key}: expected a boolean, got ${typeof value}`);
      return w.u8(value ? 1 : 0);
    case GGUFValueType.STRING:
      if (typeof value !== "string") throw new TypeError(`${key}: expected a string, got ${typeof value}`);
      return w.string(value);
    case GGUFValueType.ARRAY: {
      if (!Array.isArray(value) && !ArrayBuffer.isView(value)) throw new TypeError(`${key}: expected an array`);
      const items = value as ArrayLike<GGUFValue>;
      const item = itemType ?? inferValueType(value, key).itemType!;
      w.u32(item);
      w.u64(BigInt(items.length));
      for (let i = 0; i < items.length; i++) {
        const v = items[i];
        // A nested array's own item type is inferred from its values (typed arrays say it exactly).
        const inner = item === GGUFValueType.ARRAY ? inferValueType(v, key).itemType : undefined;
        writeValue(w, v, item, inner, key);
      }
      return;
    }
    default:
      throw new TypeError(`${key}: unknown GGUF value type ${type}`);
  }
}

// ---- layout ---------------------------------------------------------------------------------

interface Layout {
  header: Uint8Array; // everything before the data section, padding included
  alignment: number;
  /** Offsets of each tensor from the start of the data section. */
  offsets: number[];
  /** Total file size. */
  size: number;
}

function normalizeMetadata(spec: GGUFWriteSpec): [string, GGUFValue, GGUFValueTypeSpec][] {
  const out: [string, GGUFValue, GGUFValueTypeSpec][] = [];
  if (spec.metadata instanceof Map) {
    for (const [key, value] of spec.metadata) {
      out.push([key, value, spec.metadataTypes?.get(key) ?? inferValueType(value, key)]);
    }
  } else {
    for (const [key, value, type, itemType] of spec.metadata) {
      const given = type !== undefined ? { type, itemType } : spec.metadataTypes?.get(key);
      out.push([key, value, given ?? inferValueType(value, key)]);
    }
  }
  return out;
}

function layout(spec: GGUFWriteSpec): Layout {
  const entries = normalizeMetadata(spec);
  const keys = new Set<string>();
  for (const [key] of entries) {
    if (keys.has(key)) throw new Error(`GGUF writer: metadata key ${key} appears twice`);
    keys.add(key);
  }
  const stored = entries.find(([k]) => k === "general.alignment")?.[1];
  if (stored !== undefined && spec.alignment !== undefined && Number(stored) !== spec.alignment) {
    throw new Error(`GGUF writer: alignment ${spec.alignment} disagrees with general.alignment ${String(stored)}`);
  }
  const alignment = spec.alignment ?? (stored !== undefined ? Number(stored) : DEFAULT_ALIGNMENT);
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new Error(`GGUF writer: alignment ${alignment} is not a power of two`);
  }
  if (stored === undefined && alignment !== DEFAULT_ALIGNMENT) {
    entries.push(["general.alignment", alignment, { type: GGUFValueType.UINT32 }]);
  }

  const w = new ByteWriter();
  w.u32(MAGIC);
  w.u32(spec.version ?? 3);
  w.u64(BigInt(spec.tensors.length));
  w.u64(BigInt(entries.length));
  for (const [key, value, t] of entries) {
    w.string(key);
    w.u32(t.type);
    writeValue(w, value, t.type, t.itemType, `metadata ${key}`);
  }

  const offsets: number[] = [];
  const names = new Set<string>();
  let offset = 0;
  for (const t of spec.tensors) {
    if (names.has(t.name)) throw new Error(`GGUF writer: tensor ${t.name} appears twice`);
    names.add(t.name);
    if (!TYPE_TRAITS.has(t.type)) throw new Error(`GGUF writer: tensor ${t.name} has unknown storage type ${t.type}`);
    const count = t.dims.reduce((a, b) => a * b, 1);
    const expected = byteSize(t.type, count);
    if (t.bytes.byteLength !== expected) {
      throw new Error(`GGUF writer: tensor ${t.name} [${t.dims}] ${typeName(t.type)} needs ${expected} bytes, got ${t.bytes.byteLength}`);
    }
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(BigInt(d));
    w.u32(t.type);
    w.u64(BigInt(offset));
    offsets.push(offset);
    offset += pad(expected, alignment);
  }
  w.zeros(pad(w.length, alignment) - w.length);
  const header = w.result();
  return { header, alignment, offsets, size: header.byteLength + offset };
}

/** The whole file in memory (for tests and small models). */
export function encodeGGUF(spec: GGUFWriteSpec): Uint8Array {
  const l = layout(spec);
  const out = new Uint8Array(l.size); // zero-filled: the padding is already there
  out.set(l.header, 0);
  spec.tensors.forEach((t, i) => out.set(t.bytes, l.header.byteLength + l.offsets[i]));
  return out;
}

/**
 * Write a GGUF file atomically: to a temporary file beside `path`, fsync, rename over `path`,
 * fsync the folder. Tensor data is written straight from each tensor's bytes, in chunks.
 */
export function writeGGUF(path: string, spec: GGUFWriteSpec): void {
  const l = layout(spec);
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(6).toString("hex")}`;
  const fd = openSync(tmp, "wx");
  let open = true;
  try {
    writeAll(fd, l.header);
    let written = l.header.byteLength;
    const zeros = new Uint8Array(l.alignment);
    for (const t of spec.tensors) {
      for (let off = 0; off < t.bytes.byteLength; off += CHUNK) {
        writeAll(fd, t.bytes.subarray(off, Math.min(off + CHUNK, t.bytes.byteLength)));
      }
      written += t.bytes.byteLength;
      const padding = pad(written, l.alignment) - written;
      writeAll(fd, zeros.subarray(0, padding));
      written += padding;
    }
    fsyncSync(fd);
    open = false;
    closeSync(fd);
  } catch (e) {
    if (open) closeSync(fd);
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
  try {
    renameSync(tmp, path);
  } catch (e) {
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
  fsyncDir(dirname(path));
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.byteLength) off += writeSync(fd, bytes, off, bytes.byteLength - off);
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Some platforms (Windows) cannot open or fsync a folder; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
