// GGUF: the writer round-trips every value type and reproduces the fixtures byte for byte, and
// the reader survives hostile files (truncated, bit-flipped, absurd counts) with a ModelFileError.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ModelFileError } from "../src/errors.js";
import { GGUFValueType, parseGGUF, readGGUF, readGGUFHeader, type GGUFValue } from "../src/io/gguf/reader.js";
import { GGMLType } from "../src/io/gguf/types.js";
import { encodeGGUF, inferValueType, writeGGUF, type GGUFMetadataEntry } from "../src/io/gguf/writer.js";
import { fixtures } from "./helpers/fixtures.js";
import { mulberry32, tinyLlama, tinyLlamaBytes, writeTinyLlama } from "./helpers/tiny-model.js";

const T = GGUFValueType;
const fx = fixtures();
const modelsDir = fx.skip ? "" : join(fx.dir, "models");
const tmp = mkdtempSync(join(tmpdir(), "toy-gguf-test-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

function fixtureModels(): string[] {
  if (fx.skip || !existsSync(modelsDir)) return [];
  return readdirSync(modelsDir).filter((f) => f.endsWith(".gguf")).sort();
}

// ---- writer ---------------------------------------------------------------------------------

test("writer: fixtures round-trip byte for byte", { skip: fx.skip, timeout: 300_000 }, () => {
  const models = fixtureModels();
  assert.ok(models.length > 0, `no .gguf files in ${modelsDir}`);
  for (const f of models) {
    const g = readGGUF(join(modelsDir, f));
    const out = join(tmp, `rt-${f}`);
    writeGGUF(out, {
      metadata: g.metadata,
      metadataTypes: g.metadataTypes,
      tensors: g.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, bytes: g.tensorBytes(t) })),
    });
    const written = readFileSync(out);
    assert.equal(written.byteLength, g.bytes.byteLength, `${f}: size`);
    assert.ok(Buffer.from(g.bytes.buffer, g.bytes.byteOffset, g.bytes.byteLength).equals(written), `${f}: bytes differ`);
    rmSync(out);
  }
});

test("writer: all 13 value types round-trip, nested arrays included", () => {
  const entries: GGUFMetadataEntry[] = [
    ["t.u8", 250, T.UINT8],
    ["t.i8", -120, T.INT8],
    ["t.u16", 65000, T.UINT16],
    ["t.i16", -32000, T.INT16],
    ["t.u32", 4000000000, T.UINT32],
    ["t.i32", -2000000000, T.INT32],
    ["t.f32", 0.5, T.FLOAT32],
    ["t.bool", true, T.BOOL],
    ["t.bool2", false, T.BOOL],
    ["t.string", "héllo ▁wörld", T.STRING],
    ["t.empty", "", T.STRING],
    ["t.u64", 18446744073709551615n, T.UINT64],
    ["t.u64small", 7, T.UINT64],
    ["t.i64", -9223372036854775808n, T.INT64],
    ["t.i64small", -7, T.INT64],
    ["t.f64", Math.PI, T.FLOAT64],
    ["a.u8", Uint8Array.from([0, 1, 255]), T.ARRAY, T.UINT8],
    ["a.i8", Int8Array.from([-128, 0, 127]), T.ARRAY, T.INT8],
    ["a.u16", Uint16Array.from([0, 65535]), T.ARRAY, T.UINT16],
    ["a.i16", Int16Array.from([-32768, 32767]), T.ARRAY, T.INT16],
    ["a.u32", Uint32Array.from([0, 4294967295]), T.ARRAY, T.UINT32],
    ["a.i32", Int32Array.from([-5, 5]), T.ARRAY, T.INT32],
    ["a.f32", Float32Array.from([1.5, -2.25]), T.ARRAY, T.FLOAT32],
    ["a.f64", Float64Array.from([Math.E, -1e300]), T.ARRAY, T.FLOAT64],
    ["a.bool", [true, false, true], T.ARRAY, T.BOOL],
    ["a.string", ["a", "", "▁b", "<0x0A>"], T.ARRAY, T.STRING],
    ["a.u64", [1, 18446744073709551615n], T.ARRAY, T.UINT64],
    ["a.i64", [-1, -9223372036854775808n], T.ARRAY, T.INT64],
    ["a.empty", [], T.ARRAY, T.STRING],
    ["a.nested", [Int32Array.from([1, 2]), Int32Array.from([]), Int32Array.from([3])], T.ARRAY, T.ARRAY],
    ["a.nested.strings", [["x", "y"], ["z"]], T.ARRAY, T.ARRAY],
    ["a.nested3", [[Float32Array.from([1]), Float32Array.from([2, 3])], [Float32Array.from([])]], T.ARRAY, T.ARRAY],
  ];
  const bytes = encodeGGUF({ metadata: entries, tensors: [] });
  const g = parseGGUF(bytes, "all-types.gguf");
  assert.equal(g.version, 3);
  assert.deepEqual([...g.metadata.keys()], entries.map((e) => e[0]));
  for (const [key, value, type, itemType] of entries) {
    assert.deepEqual(g.metadata.get(key), value, key);
    assert.equal(g.metadataTypes.get(key)!.type, type, `${key}: type`);
    if (type === T.ARRAY) assert.equal(g.metadataTypes.get(key)!.itemType, itemType, `${key}: item type`);
  }
  // Reading and writing again (the reader's types, no hints) gives the same bytes.
  const again = encodeGGUF({ metadata: g.metadata, metadataTypes: g.metadataTypes, tensors: [] });
  assert.deepEqual(again, bytes);
  // An empty array with nothing to infer from is written as INT32.
  const empty = parseGGUF(encodeGGUF({ metadata: [["e", [[], ["s"]]]], tensors: [] }));
  assert.deepEqual(empty.metadata.get("e"), [Int32Array.from([]), ["s"]]);
});

test("writer: value types are inferred when not given", () => {
  const cases: [GGUFValue, GGUFValueType, GGUFValueType?][] = [
    [3, T.UINT32], [0, T.UINT32], [-3, T.INT32], [2 ** 40, T.UINT64], [-(2 ** 40), T.INT64], [0.25, T.FLOAT32],
    [5n, T.UINT64], [-5n, T.INT64], [true, T.BOOL], ["s", T.STRING],
    [Float32Array.from([1]), T.ARRAY, T.FLOAT32], [Int32Array.from([1]), T.ARRAY, T.INT32],
    [["a", "b"], T.ARRAY, T.STRING], [[1, 2], T.ARRAY, T.UINT32], [[1, -2], T.ARRAY, T.INT32], [[1, 2.5], T.ARRAY, T.FLOAT32],
    [[[1], [2]], T.ARRAY, T.ARRAY], [[true], T.ARRAY, T.BOOL],
  ];
  for (const [value, type, itemType] of cases) {
    const spec = inferValueType(value);
    assert.equal(spec.type, type, `${String(value)}`);
    if (itemType !== undefined) assert.equal(spec.itemType, itemType, `${String(value)}: item type`);
  }
  const g = parseGGUF(encodeGGUF({ metadata: cases.map(([v], i) => [`k${i}`, v] as GGUFMetadataEntry), tensors: [] }));
  cases.forEach(([, type], i) => assert.equal(g.metadataTypes.get(`k${i}`)!.type, type));
  assert.deepEqual(g.metadata.get("k16"), [Uint32Array.from([1]), Uint32Array.from([2])]);
  assert.throws(() => inferValueType([1, "a"]), TypeError);
});

test("writer: alignment 64 is written as general.alignment and honoured", () => {
  const model = tinyLlama({ alignment: 64 });
  const bytes = encodeGGUF(model.spec);
  const g = parseGGUF(bytes, "aligned.gguf");
  assert.equal(g.alignment, 64);
  assert.equal(g.metadata.get("general.alignment"), 64);
  assert.equal(g.metadataTypes.get("general.alignment")!.type, T.UINT32);
  assert.equal(g.dataOffset % 64, 0);
  assert.equal(bytes.byteLength % 64, 0);
  for (const t of g.tensors) {
    assert.equal(t.offset % 64, 0, t.name);
    const w = model.weights.get(t.name)!;
    assert.deepEqual(g.tensorBytes(t), new Uint8Array(w.buffer, w.byteOffset, w.byteLength), t.name);
  }
  // The default alignment is not written; a conflicting alignment is refused.
  assert.equal(parseGGUF(tinyLlamaBytes()).metadata.has("general.alignment"), false);
  assert.throws(() => encodeGGUF({ metadata: [["general.alignment", 64, T.UINT32]], tensors: [], alignment: 128 }));
  assert.throws(() => encodeGGUF({ metadata: [], tensors: [], alignment: 48 }));
  // Re-writing the read file reproduces it.
  assert.deepEqual(encodeGGUF({ metadata: g.metadata, metadataTypes: g.metadataTypes, tensors: g.tensors.map((t) => ({ ...t, bytes: g.tensorBytes(t) })) }), bytes);
});

test("writer: v2 files (same layout) parse", () => {
  const bytes = tinyLlamaBytes();
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(4, 2, true);
  const g = parseGGUF(bytes, "v2.gguf");
  assert.equal(g.version, 2);
  assert.equal(g.tensors.length, tinyLlama().spec.tensors.length);
  const v2 = encodeGGUF({ ...tinyLlama().spec, version: 2 });
  assert.deepEqual(v2, bytes);
});

test("writer: writes are atomic and leave no temporary files", () => {
  const dir = mkdtempSync(join(tmp, "atomic-"));
  const path = join(dir, "model.gguf");
  writeFileSync(path, "old contents");
  writeTinyLlama(path);
  assert.deepEqual(new Uint8Array(readFileSync(path)), tinyLlamaBytes());
  assert.deepEqual(readdirSync(dir), ["model.gguf"]);
  // A bad tensor is refused before anything is written; the old file stays.
  assert.throws(
    () => writeGGUF(path, { metadata: [], tensors: [{ name: "x", dims: [4], type: GGMLType.F32, bytes: new Uint8Array(15) }] }),
    /needs 16 bytes, got 15/,
  );
  assert.deepEqual(new Uint8Array(readFileSync(path)), tinyLlamaBytes());
  assert.deepEqual(readdirSync(dir), ["model.gguf"]);
});

test("tiny model: llama metadata, shapes, determinism, tied and encode options", () => {
  const m = tinyLlama();
  const g = parseGGUF(encodeGGUF(m.spec), "tiny.gguf");
  const md = g.metadata;
  assert.equal(md.get("general.architecture"), "llama");
  assert.equal(md.get("llama.embedding_length"), 32);
  assert.equal(md.get("llama.block_count"), 2);
  assert.equal(md.get("llama.attention.head_count"), 4);
  assert.equal(md.get("llama.attention.head_count_kv"), 2);
  assert.equal(md.get("llama.feed_forward_length"), 64);
  assert.equal(md.get("llama.context_length"), 64);
  assert.equal(md.get("llama.rope.dimension_count"), 8);
  assert.equal(md.get("llama.rope.freq_base"), 10000);
  assert.ok(Math.abs((md.get("llama.attention.layer_norm_rms_epsilon") as number) - 1e-5) < 1e-10);
  assert.equal(md.get("tokenizer.ggml.model"), "llama");
  const tokens = md.get("tokenizer.ggml.tokens") as string[];
  assert.equal(tokens.length, 260);
  assert.deepEqual(tokens.slice(0, 4), ["<unk>", "<s>", "</s>", "<0x00>"]);
  assert.equal(tokens[258], "<0xFF>");
  assert.equal(tokens[259], "▁a");
  const types = md.get("tokenizer.ggml.token_type") as Int32Array;
  assert.deepEqual([types[0], types[1], types[2], types[3], types[259]], [2, 3, 3, 6, 1]);
  assert.equal((md.get("tokenizer.ggml.scores") as Float32Array).length, 260);
  assert.equal(md.get("tokenizer.ggml.bos_token_id"), 1);
  assert.equal(md.get("tokenizer.ggml.eos_token_id"), 2);
  assert.equal(md.get("tokenizer.ggml.unknown_token_id"), 0);
  const dims = (name: string) => g.tensor(name)?.dims;
  assert.deepEqual(dims("token_embd.weight"), [32, 260]);
  assert.deepEqual(dims("blk.0.attn_q.weight"), [32, 32]);
  assert.deepEqual(dims("blk.1.attn_k.weight"), [32, 16]);
  assert.deepEqual(dims("blk.1.attn_v.weight"), [32, 16]);
  assert.deepEqual(dims("blk.0.attn_output.weight"), [32, 32]);
  assert.deepEqual(dims("blk.0.ffn_gate.weight"), [32, 64]);
  assert.deepEqual(dims("blk.0.ffn_up.weight"), [32, 64]);
  assert.deepEqual(dims("blk.0.ffn_down.weight"), [64, 32]);
  assert.deepEqual(dims("blk.0.attn_norm.weight"), [32]);
  assert.deepEqual(dims("output_norm.weight"), [32]);
  assert.deepEqual(dims("output.weight"), [32, 260]);
  assert.equal(g.tensors.length, 1 + 2 * 9 + 2);
  assert.ok(g.tensors.every((t) => t.type === GGMLType.F32));
  // Non-trivial values: not all equal, finite, norms near 1.
  const emb = m.weights.get("token_embd.weight")!;
  assert.ok(emb.every(Number.isFinite) && new Set(emb).size > emb.length / 2);
  const nrm = m.weights.get("output_norm.weight")!;
  assert.ok(nrm.every((v) => v > 0.5 && v < 1.5));

  assert.deepEqual(tinyLlamaBytes(), encodeGGUF(m.spec), "same seed, same bytes");
  assert.notDeepEqual(tinyLlamaBytes({ seed: 7 }), encodeGGUF(m.spec));
  assert.equal(parseGGUF(tinyLlamaBytes({ tied: true })).tensor("output.weight"), undefined);

  const seen: string[] = [];
  const f16 = tinyLlama({
    encode: (data, rows, cols, name) => {
      assert.equal(data.length, rows * cols);
      seen.push(name);
      return { type: GGMLType.F16, bytes: new Uint8Array(rows * cols * 2) };
    },
  });
  const gf = parseGGUF(encodeGGUF(f16.spec));
  assert.equal(gf.tensor("blk.0.ffn_down.weight")!.type, GGMLType.F16);
  assert.equal(gf.tensor("blk.0.ffn_norm.weight")!.type, GGMLType.F32);
  assert.equal(seen.length, 1 + 2 * 7 + 1);
});

// ---- hostile files --------------------------------------------------------------------------

interface Fields {
  tensorCount: number; kvCount: number; firstKeyLen: number; firstType: number;
  firstStringLen?: number; firstArrayItemType?: number; firstArrayLen?: number; alignmentValue?: number;
  tensorNameLen?: number; nDims?: number; dim0?: number; tensorType?: number; tensorOffset?: number;
  dataOffset: number;
}

/** Walk a valid file's header and note where each field we patch lives. */
function fields(bytes: Uint8Array): Fields {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 24;
  const f: Fields = { tensorCount: 8, kvCount: 16, firstKeyLen: 24, firstType: 0, dataOffset: 0 };
  const str = () => { const n = Number(v.getBigUint64(pos, true)); pos += 8; const s = Buffer.from(bytes.subarray(pos, pos + n)).toString(); pos += n; return s; };
  const SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (type: number): void => {
    if (type === T.STRING) { f.firstStringLen ??= pos; str(); return; }
    if (type === T.ARRAY) {
      const item = v.getUint32(pos, true);
      f.firstArrayItemType ??= pos;
      f.firstArrayLen ??= pos + 4;
      const n = Number(v.getBigUint64(pos + 4, true));
      pos += 12;
      for (let i = 0; i < n; i++) skip(item);
      return;
    }
    pos += SIZE[type];
  };
  const nKV = Number(v.getBigUint64(16, true));
  for (let i = 0; i < nKV; i++) {
    const key = str();
    const type = v.getUint32(pos, true);
    if (i === 0) f.firstType = pos;
    pos += 4;
    if (key === "general.alignment") f.alignmentValue = pos;
    skip(type);
  }
  const nT = Number(v.getBigUint64(8, true));
  for (let i = 0; i < nT; i++) {
    if (i === 0) f.tensorNameLen = pos;
    str();
    const nd = v.getUint32(pos, true);
    if (i === 0) { f.nDims = pos; f.dim0 = pos + 4; }
    pos += 4 + 8 * nd;
    if (i === 0) f.tensorType = pos;
    pos += 4;
    if (i === nT - 1) f.tensorOffset = pos;
    pos += 8;
  }
  f.dataOffset = pos;
  return f;
}

/** Parse hostile bytes: success, or a one-line ModelFileError naming the file, quickly. */
function expectSafe(parse: () => unknown, path: string, label: string, match?: RegExp): "ok" | "error" {
  const start = performance.now();
  let outcome: "ok" | "error" = "ok";
  try {
    const g = parse() as ReturnType<typeof parseGGUF>;
    for (const t of g.tensors) assert.ok(t.offset + t.byteLength <= g.bytes.byteLength, `${label}: tensor ${t.name} out of bounds`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    assert.ok(e instanceof ModelFileError, `${label}: threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
    assert.ok(e.message.includes(path), `${label}: message does not name the file: ${e.message}`);
    assert.ok(!/[\r\n]/.test(e.message), `${label}: message spans lines: ${JSON.stringify(e.message)}`);
    if (match) assert.match(e.message, match, label);
    outcome = "error";
  }
  if (match && outcome === "ok") assert.fail(`${label}: parsed, expected an error matching ${match}`);
  const ms = performance.now() - start;
  assert.ok(ms < 1000, `${label}: took ${ms.toFixed(0)} ms`);
  return outcome;
}

interface Subject { name: string; bytes: Uint8Array }

function subjects(): Subject[] {
  const out: Subject[] = [
    { name: "tiny.gguf", bytes: tinyLlamaBytes() },
    { name: "tiny-align64.gguf", bytes: tinyLlamaBytes({ alignment: 64, seed: 3, nVocab: 300 }) },
  ];
  for (const f of ["stories260K.gguf", "llama-tiny.gguf"]) {
    const p = join(modelsDir, f);
    if (!fx.skip && existsSync(p)) out.push({ name: f, bytes: new Uint8Array(readFileSync(p)) });
    else console.warn(`SKIPPED: hostile-file cases on fixture ${f} (not found)`);
  }
  return out;
}

// Memory: rss may not grow by more than 200 MB within any one fuzz loop (the subject's own bytes
// are loaded before the baseline is taken).
let rssBase = 0;
let worstGrowth = 0;
const startRss = () => { rssBase = process.memoryUsage().rss; };
const noteRss = () => { worstGrowth = Math.max(worstGrowth, process.memoryUsage().rss - rssBase); };

for (const s of subjects()) {
  test(`hostile: ${s.name} truncated`, { timeout: 120_000 }, () => {
    startRss();
    const { dataOffset } = fields(s.bytes);
    const rand = mulberry32(1234);
    const cuts = new Set<number>();
    for (let k = 0; k < 16; k++) cuts.add(Math.floor((s.bytes.byteLength * k) / 16));
    for (const c of [0, 1, 3, 4, 7, 8, 15, 16, 23, 24, 25, 31]) cuts.add(c);
    for (let i = 0; i < 24; i++) cuts.add(Math.floor(rand() * dataOffset));
    cuts.add(dataOffset - 1);
    cuts.add(s.bytes.byteLength - 1);
    let errors = 0;
    for (const cut of [...cuts].sort((a, b) => a - b)) {
      const path = join(tmp, `cut-${cut}-${s.name}`);
      const part = s.bytes.subarray(0, cut);
      if (expectSafe(() => parseGGUF(part, path), path, `${s.name} cut at ${cut} (memory)`) === "error") errors++;
      writeFileSync(path, part);
      expectSafe(() => readGGUF(path), path, `${s.name} cut at ${cut} (file)`);
      if (cut < dataOffset) expectSafe(() => readGGUFHeader(path), path, `${s.name} cut at ${cut} (header)`, /truncated|too short|left in the file|past the end/);
      rmSync(path);
      noteRss();
    }
    assert.ok(errors >= cuts.size - 2, `${s.name}: only ${errors} of ${cuts.size} cuts were refused`);
  });

  test(`hostile: ${s.name} random byte flips`, { timeout: 120_000 }, () => {
    const { dataOffset } = fields(s.bytes);
    const bytes = s.bytes.slice();
    startRss();
    const rand = mulberry32(99);
    const path = `/models/flipped-${s.name}`;
    const tally = { ok: 0, error: 0 };
    for (let variant = 0; variant < 200; variant++) {
      const n = 1 + Math.floor(rand() * 4);
      const saved: [number, number][] = [];
      for (let i = 0; i < n; i++) {
        // Mostly the header (and mostly its first bytes, where counts and lengths live).
        const r = rand();
        const at = r < 0.4 ? Math.floor(rand() * Math.min(dataOffset, 256))
          : r < 0.9 ? Math.floor(rand() * dataOffset) : Math.floor(rand() * bytes.byteLength);
        saved.push([at, bytes[at]]);
        bytes[at] = rand() < 0.5 ? bytes[at] ^ (1 << Math.floor(rand() * 8)) : Math.floor(rand() * 256);
      }
      tally[expectSafe(() => parseGGUF(bytes, path), path, `${s.name} flip #${variant} at ${saved.map((x) => x[0])}`)]++;
      for (const [at, b] of saved.reverse()) bytes[at] = b;
      noteRss();
    }
    assert.deepEqual(bytes, s.bytes);
    assert.ok(tally.error > 0, `${s.name}: no flip was refused`);
  });

  test(`hostile: ${s.name} absurd counts, lengths and types`, { timeout: 120_000 }, () => {
    startRss();
    const f = fields(s.bytes);
    type Patch = [label: string, at: number | undefined, width: 4 | 8, value: bigint, match: RegExp];
    const patches: Patch[] = [
      ["magic", 0, 4, 0x46554746n, /not a GGUF file: magic/],
      ["version 1", 4, 4, 1n, /version 1/],
      ["version 4", 4, 4, 4n, /version 4/],
      ["tensor count 2^63", f.tensorCount, 8, 1n << 63n, /tensor count/],
      ["tensor count 2^64-1", f.tensorCount, 8, (1n << 64n) - 1n, /tensor count/],
      ["kv count 2^40", f.kvCount, 8, 1n << 40n, /metadata count/],
      ["key length 2^62", f.firstKeyLen, 8, 1n << 62n, /length of metadata key #0/],
      ["value type 99", f.firstType, 4, 99n, /unknown value type 99/],
      ["string length 2^62", f.firstStringLen, 8, 1n << 62n, /length of metadata/],
      ["array item type 99", f.firstArrayItemType, 4, 99n, /unknown array item type 99/],
      ["array length 2^50", f.firstArrayLen, 8, 1n << 50n, /array length/],
      ["tensor name length 2^62", f.tensorNameLen, 8, 1n << 62n, /length of name of tensor #0/],
      ["n_dims 1000", f.nDims, 4, 1000n, /1000 dimensions/],
      ["n_dims 0", f.nDims, 4, 0n, /0 dimensions/],
      ["dim 2^40", f.dim0, 8, 1n << 40n, /dimension 0 is 1099511627776/],
      ["tensor type 77", f.tensorType, 4, 77n, /unsupported storage type/],
      ["offset past EOF", f.tensorOffset, 8, BigInt(s.bytes.byteLength), /runs past the end/],
      ["offset 2^63", f.tensorOffset, 8, 1n << 63n, /runs past the end|not a multiple/],
      ["offset unaligned", f.tensorOffset, 8, 1n, /not a multiple of the alignment/],
      ["alignment 3", f.alignmentValue, 4, 3n, /general.alignment is 3/],
      ["alignment 0", f.alignmentValue, 4, 0n, /general.alignment is 0/],
      ["alignment 2^31", f.alignmentValue, 4, 1n << 31n, /general.alignment/],
    ];
    let applied = 0;
    for (const [label, at, width, value, match] of patches) {
      if (at === undefined) continue;
      applied++;
      const whole = s.bytes.slice();
      const v = new DataView(whole.buffer, whole.byteOffset, whole.byteLength);
      if (width === 4) v.setUint32(at, Number(value), true);
      else v.setBigUint64(at, value, true);
      const path = `/models/patched-${label.replace(/\W+/g, "_")}-${s.name}`;
      expectSafe(() => parseGGUF(whole, path), path, `${s.name}: ${label}`, match);
      noteRss();
    }
    if (f.alignmentValue !== undefined) {
      // general.alignment stored as FLOAT32 0.5: a number, but not a whole one.
      const whole = s.bytes.slice();
      const v = new DataView(whole.buffer, whole.byteOffset, whole.byteLength);
      v.setUint32(f.alignmentValue - 4, T.FLOAT32, true);
      v.setFloat32(f.alignmentValue, 0.5, true);
      const path = `/models/patched-alignment-half-${s.name}`;
      expectSafe(() => parseGGUF(whole, path), path, `${s.name}: alignment 0.5`, /general.alignment is 0.5/);
    }
    assert.ok(applied >= (f.alignmentValue !== undefined ? patches.length : patches.length - 3));
  });
}

test("hostile: memory stays bounded over all the cases", () => {
  const growth = worstGrowth / 2 ** 20;
  console.log(`worst rss growth within one fuzz loop: ${growth.toFixed(1)} MB`);
  assert.ok(growth < 200, `rss grew by ${growth.toFixed(0)} MB within one fuzz loop`);
});

test("hostile: a missing file is a ModelFileError", () => {
  const path = join(tmp, "does-not-exist.gguf");
  expectSafe(() => readGGUF(path), path, "missing", /no such file/);
});
