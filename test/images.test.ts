// Images: IDX round trips and every malformed-IDX error, MNIST folders and their split, PNG/JPEG
// class folders (every PNG kind, JPEG, gray/RGB conversion, resizing, corrupt files), the seeded
// split, standardization, batches (determinism, exact resume) and augmentation; then MNIST's
// own test files from ../shared/data/mnist.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { encode as encodePng, type ImageData as PngImage } from "fast-png";
import { encode as encodeJpeg } from "jpeg-js";
import { DataFileError, EXIT, UsageError } from "../src/errors.js";
import { Rng } from "../src/data/rng.js";
import {
  ImageBatches, batchesInOrder, classCounts, computeNormalization, encodeIdx, isGray, loadImage,
  loadImageFolder, loadMnistDir, normalize, parseIdx, randomTranslate, readIdx, readImage,
  readImageFolder, resizeImage, splitByFraction, toChannels, type ImageSet,
} from "../src/io/images/index.js";
import { sharedData } from "./helpers/fixtures.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-images-test-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let dirs = 0;
const freshDir = (): string => { const d = join(tmp, `d${dirs++}`); mkdirSync(d, { recursive: true }); return d; };

/** Assert that `fn` throws a DataFileError (exit 3) whose message contains every part. */
function throwsDataError(fn: () => unknown, ...parts: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof DataFileError, `expected a DataFileError, got ${e}`);
    assert.equal(e.exitCode, EXIT.badModel);
    for (const p of parts) assert.ok(e.message.includes(p), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(p)}`);
    return true;
  });
}

// ---- IDX --------------------------------------------------------------------------------

test("IDX: every type code round-trips, plain and gzip", () => {
  const arrays = [
    Uint8Array.from([0, 1, 127, 128, 255, 9]),
    Int8Array.from([-128, -1, 0, 1, 127, 5]),
    Int16Array.from([-32768, -2, 0, 258, 32767, 7]),
    Int32Array.from([-2147483648, -3, 0, 65536, 2147483647, 8]),
    Float32Array.from([-1.5, 0, 3.25, 1e-20, Infinity, -7]),
    Float64Array.from([Math.PI, -0.1, 0, 1e300, -1e-300, 2]),
  ];
  const dir = freshDir();
  for (const a of arrays) {
    const bytes = encodeIdx(a, [2, 3]);
    for (const gz of [false, true]) {
      const path = join(dir, `${a.constructor.name}${gz ? ".gz" : ""}`);
      writeFileSync(path, gz ? gzipSync(bytes) : bytes);
      const f = readIdx(path);
      assert.deepEqual(f.dims, [2, 3]);
      assert.equal(f.data.constructor, a.constructor, path);
      assert.deepEqual(Array.from(f.data), Array.from(a), path);
    }
  }
  // Gzip is told by its magic, not by the name (and a .gz name on a plain file is fine too).
  writeFileSync(join(dir, "plain-named.gz"), encodeIdx(Uint8Array.from([1, 2]), [2]));
  writeFileSync(join(dir, "gzipped-named-plain"), gzipSync(encodeIdx(Uint8Array.from([3, 4]), [2])));
  assert.deepEqual(Array.from(readIdx(join(dir, "plain-named.gz")).data), [1, 2]);
  assert.deepEqual(Array.from(readIdx(join(dir, "gzipped-named-plain")).data), [3, 4]);
});

test("IDX: values are big-endian, dims outermost first", () => {
  // 00 00 0B 02 | dims 1, 2 | i16 0x0102 = 258, 0xFFFE = −2
  const bytes = Uint8Array.from([0, 0, 0x0b, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0x01, 0x02, 0xff, 0xfe]);
  const f = parseIdx(bytes, "hand.idx");
  assert.equal(f.type, 0x0b);
  assert.deepEqual(f.dims, [1, 2]);
  assert.deepEqual(Array.from(f.data), [258, -2]);
  assert.deepEqual(encodeIdx(f.data, f.dims), bytes);
});

test("IDX: every malformed file is a DataFileError naming the file and the field", () => {
  const p = "bad.idx";
  const header = (type: number, dims: number[]) => {
    const b = new Uint8Array(4 + 4 * dims.length);
    b[2] = type; b[3] = dims.length;
    dims.forEach((d, i) => new DataView(b.buffer).setUint32(4 + 4 * i, d, false));
    return b;
  };
  const cat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((x) => [...x]));
  throwsDataError(() => parseIdx(new Uint8Array(0), p), p, "truncated file", "needs 4 bytes, file has 0");
  throwsDataError(() => parseIdx(Uint8Array.from([0, 0, 8]), p), p, "truncated file", "file has 3");
  throwsDataError(() => parseIdx(Uint8Array.from([0x50, 0x4b, 3, 4, 0, 0]), p), p, "magic", "found 50 4b 03 04", "not an IDX file");
  throwsDataError(() => parseIdx(cat(header(0x0a, [1]), Uint8Array.of(0)), p), p, "type code 0x0a", "0x08 (ubyte)", "0x0e (f64)");
  throwsDataError(() => parseIdx(Uint8Array.from([0, 0, 8, 0]), p), p, "dimension count 0");
  throwsDataError(() => parseIdx(header(8, [2, 2]).subarray(0, 9), p), p, "truncated header", "2 dimensions need 12 bytes, file has 9");
  throwsDataError(() => parseIdx(cat(header(8, [2, 3]), new Uint8Array(5)), p), p, "truncated data", "need at least 6 bytes", "file has 5");
  throwsDataError(() => parseIdx(cat(header(0x0c, [2]), new Uint8Array(7)), p), p, "truncated data", "of i32 need at least 8 bytes", "file has 7");
  throwsDataError(() => parseIdx(cat(header(8, [2, 3]), new Uint8Array(8)), p), p, "data length", "need 6 bytes", "file has 8 (2 extra)");
  // Absurd dimensions are refused from the header, before any allocation.
  throwsDataError(() => parseIdx(cat(header(0x0e, [0xffffffff, 0xffffffff, 0xffffffff]), new Uint8Array(16)), p), p, "truncated data", "dimension 0 is 4294967295");
  // Gzip: corrupt and truncated streams.
  throwsDataError(() => parseIdx(Uint8Array.from([0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8]), p), p, "gzip stream: cannot decompress");
  const gz = gzipSync(encodeIdx(new Uint8Array(1000).fill(7), [10, 100]));
  throwsDataError(() => parseIdx(gz.subarray(0, gz.length - 12), p), p, "gzip stream");
  // A file that is not there.
  throwsDataError(() => readIdx(join(tmp, "missing.idx")), "missing.idx", "no such file");
});

// ---- MNIST folders ----------------------------------------------------------------------

/** A small MNIST-like pair: N images of H×W whose pixel values encode (image, position), labels i mod 10. */
function writeMnistPair(dir: string, part: "train" | "t10k", N: number, H = 4, W = 3, opts: { gzip?: boolean; dotted?: boolean; offset?: number } = {}) {
  const px = new Uint8Array(N * H * W).map((_, i) => (i * 7 + (opts.offset ?? 0)) % 256);
  const labels = new Uint8Array(N).map((_, i) => (i + (opts.offset ?? 0)) % 10);
  const name = (kind: string, rank: number) => `${part}-${kind}${opts.dotted ? "." : "-"}idx${rank}-ubyte${opts.gzip ? ".gz" : ""}`;
  const write = (n: string, b: Uint8Array) => writeFileSync(join(dir, n), opts.gzip ? gzipSync(b) : b);
  write(name("images", 3), encodeIdx(px, [N, H, W]));
  write(name("labels", 1), encodeIdx(labels, [N]));
  return { px, labels };
}

test("MNIST folder: only t10k → first 4/5 train, last 1/5 evaluate; counts override", () => {
  const dir = freshDir();
  const { px, labels } = writeMnistPair(dir, "t10k", 50, 4, 3, { gzip: true });
  const d = loadMnistDir(dir, { normalize: false });
  assert.equal(d.train.count, 40);
  assert.equal(d.eval.count, 10);
  assert.equal(d.normalization, null);
  assert.deepEqual([d.train.height, d.train.width, d.train.channels], [4, 3, 1]);
  assert.deepEqual(d.train.classes, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
  assert.deepEqual(Array.from(d.train.labels), Array.from(labels.subarray(0, 40)));
  assert.deepEqual(Array.from(d.eval.labels), Array.from(labels.subarray(40)));
  assert.equal(d.train.pixels[5], Math.fround(px[5] / 255));
  assert.equal(d.eval.pixels[0], Math.fround(px[40 * 12] / 255));
  assert.match(d.description, /only the t10k files; train on the first 40 of 50, evaluate on the last 10/);

  const a = loadMnistDir(dir, { trainCount: 30, normalize: false });
  assert.deepEqual([a.train.count, a.eval.count], [30, 20]);
  const b = loadMnistDir(dir, { evalCount: 5, normalize: false });
  assert.deepEqual([b.train.count, b.eval.count], [45, 5]);
  const c = loadMnistDir(dir, { trainCount: 10, evalCount: 5, normalize: false });
  assert.deepEqual([c.train.count, c.eval.count], [10, 5]);
  assert.deepEqual(Array.from(c.eval.labels), Array.from(labels.subarray(45))); // still the last ones
  assert.throws(() => loadMnistDir(dir, { trainCount: 40, evalCount: 11 }), UsageError);
  assert.throws(() => loadMnistDir(dir, { trainCount: -1 }), UsageError);
  assert.throws(() => loadMnistDir(dir, { evalCount: 1.5 }), UsageError);
});

test("MNIST folder: train and t10k → train on train, evaluate on t10k; file name variants", () => {
  const dir = freshDir();
  const tr = writeMnistPair(dir, "train", 30, 4, 3, { dotted: true });
  const te = writeMnistPair(dir, "t10k", 12, 4, 3, { gzip: true, offset: 3 });
  const d = loadMnistDir(dir, { normalize: false });
  assert.deepEqual([d.train.count, d.eval.count], [30, 12]);
  assert.deepEqual(Array.from(d.train.labels), Array.from(tr.labels));
  assert.deepEqual(Array.from(d.eval.labels), Array.from(te.labels));
  const e = loadMnistDir(dir, { trainCount: 7, evalCount: 4, normalize: false });
  assert.deepEqual([e.train.count, e.eval.count], [7, 4]);
  assert.throws(() => loadMnistDir(dir, { trainCount: 31 }), UsageError);
  // A plain file is preferred over a .gz of the same name.
  writeFileSync(join(dir, "train-labels.idx1-ubyte.gz"), "not even gzip");
  assert.equal(loadMnistDir(dir).train.count, 30);
});

test("MNIST folder: missing halves, wrong shapes and mismatched counts are clear errors", () => {
  assert.throws(() => loadMnistDir(join(tmp, "nowhere")), (e: unknown) => e instanceof DataFileError && /no such folder/.test(e.message));
  const empty = freshDir();
  writeFileSync(join(empty, "readme.txt"), "hi");
  assert.throws(() => loadMnistDir(empty), (e: unknown) => e instanceof DataFileError && /no MNIST files/.test(e.message));
  const half = freshDir();
  writeFileSync(join(half, "t10k-images-idx3-ubyte"), encodeIdx(new Uint8Array(12), [1, 4, 3]));
  assert.throws(() => loadMnistDir(half), /but not its labels/);
  const mismatch = freshDir();
  writeFileSync(join(mismatch, "t10k-images-idx3-ubyte"), encodeIdx(new Uint8Array(24), [2, 4, 3]));
  writeFileSync(join(mismatch, "t10k-labels-idx1-ubyte"), encodeIdx(new Uint8Array(3), [3]));
  throwsDataError(() => loadMnistDir(mismatch), "t10k-labels-idx1-ubyte", "3 labels, expected 2");
  const wrongType = freshDir();
  writeFileSync(join(wrongType, "t10k-images-idx3-ubyte"), encodeIdx(new Float32Array(24), [2, 4, 3]));
  writeFileSync(join(wrongType, "t10k-labels-idx1-ubyte"), encodeIdx(new Uint8Array(2), [2]));
  throwsDataError(() => loadMnistDir(wrongType), "t10k-images-idx3-ubyte", "expected ubyte images", "type 0x0d");
  const truncated = freshDir();
  writeFileSync(join(truncated, "t10k-images-idx3-ubyte.gz"), gzipSync(encodeIdx(new Uint8Array(24), [2, 4, 3]).subarray(0, 30)));
  writeFileSync(join(truncated, "t10k-labels-idx1-ubyte"), encodeIdx(new Uint8Array(2), [2]));
  throwsDataError(() => loadMnistDir(truncated), "t10k-images-idx3-ubyte.gz", "truncated data");
});

test("normalization: statistics from the training split only, applied to both", () => {
  const dir = freshDir();
  writeMnistPair(dir, "t10k", 50);
  const raw = loadMnistDir(dir, { normalize: false });
  const d = loadMnistDir(dir);
  let s = 0, q = 0;
  for (const x of raw.train.pixels) { s += x; q += x * x; }
  const n = raw.train.pixels.length, mean = s / n, std = Math.sqrt(q / n - mean * mean);
  assert.ok(Math.abs(d.normalization!.mean[0] - mean) < 1e-12);
  assert.ok(Math.abs(d.normalization!.std[0] - std) < 1e-12);
  assert.deepEqual(d.train.normalization, d.normalization);
  assert.deepEqual(d.eval.normalization, d.normalization);
  for (const [set, rawSet] of [[d.train, raw.train], [d.eval, raw.eval]] as const) {
    for (const i of [0, 7, rawSet.pixels.length - 1]) assert.ok(Math.abs(set.pixels[i] - Math.fround((rawSet.pixels[i] - mean) / std)) < 1e-6);
  }
  // The training split standardized has mean 0 and std 1; the evaluation split need not.
  const again = computeNormalization({ ...d.train, normalization: null });
  assert.ok(Math.abs(again.mean[0]) < 1e-6 && Math.abs(again.std[0] - 1) < 1e-5);
  // A given normalization is applied as is (a checkpoint's, at evaluation time).
  const given = loadMnistDir(dir, { normalize: { mean: [0.5], std: [0.25] } });
  assert.ok(Math.abs(given.eval.pixels[3] - (raw.eval.pixels[3] - 0.5) / 0.25) < 1e-6);
  assert.throws(() => normalize(d.train, d.normalization!), /already normalized/);
});

// ---- PNG / JPEG folders -----------------------------------------------------------------

const png = (img: PngImage) => encodePng(img);
/** RGBA bytes for jpeg-js from an [H, W] function giving [r, g, b]. */
function jpegOf(width: number, height: number, color: (x: number, y: number) => [number, number, number]): Uint8Array {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) {
    const [r, g, b] = color(x, y), i = 4 * (y * width + x);
    data[i] = r; data[i + 1] = g; data[i + 2] = b; data[i + 3] = 255;
  }
  return encodeJpeg({ width, height, data }, 100).data;
}

test("image decoding: every PNG kind, JPEG, alpha dropped", () => {
  const dir = freshDir();
  const cases: [string, Uint8Array, { channels: number; first: number[] }][] = [
    ["gray8.png", png({ width: 2, height: 1, data: Uint8Array.from([0, 51]), channels: 1, depth: 8 }), { channels: 1, first: [0, 0.2] }],
    ["gray16.png", png({ width: 2, height: 1, data: Uint16Array.from([65535, 13107]), channels: 1, depth: 16 }), { channels: 1, first: [1, 0.2] }],
    // 1-bit, 3 pixels a row: rows padded to a byte.
    ["gray1.png", png({ width: 3, height: 2, data: Uint8Array.from([0b10100000, 0b01000000]), channels: 1, depth: 1 }), { channels: 1, first: [1, 0, 1, 0, 1, 0] }],
    ["gray-alpha.png", png({ width: 1, height: 1, data: Uint8Array.from([102, 7]), channels: 2, depth: 8 }), { channels: 1, first: [0.4] }],
    ["rgb.png", png({ width: 1, height: 1, data: Uint8Array.from([255, 0, 51]), channels: 3, depth: 8 }), { channels: 3, first: [1, 0, 0.2] }],
    ["rgba.png", png({ width: 1, height: 1, data: Uint8Array.from([0, 255, 0, 0]), channels: 4, depth: 8 }), { channels: 3, first: [0, 1, 0] }],
    ["palette2.png", png({ width: 3, height: 1, data: Uint8Array.from([0b00011000]), channels: 1, depth: 2, palette: [[255, 0, 0], [0, 255, 0], [0, 0, 255]] }), { channels: 3, first: [1, 0, 0, 0, 255 / 255, 0, 0, 0, 1] }],
  ];
  for (const [name, bytes, want] of cases) {
    writeFileSync(join(dir, name), bytes);
    const img = readImage(join(dir, name));
    assert.equal(img.channels, want.channels, name);
    assert.deepEqual(Array.from(img.data).map((v) => +v.toFixed(6)), want.first, name);
  }
  writeFileSync(join(dir, "gray.jpg"), jpegOf(4, 4, (x, y) => { const v = 16 * (4 * y + x); return [v, v, v]; }));
  const j = readImage(join(dir, "gray.jpg"));
  assert.deepEqual([j.width, j.height, j.channels], [4, 4, 3]);
  assert.ok(isGray(j), "a gray JPEG decodes with R = G = B");
  writeFileSync(join(dir, "red.jpg"), jpegOf(8, 8, () => [250, 10, 10]));
  const r = readImage(join(dir, "red.jpg"));
  assert.ok(!isGray(r));
  assert.ok(Math.abs(r.data[0] - 250 / 255) < 0.03 && r.data[1] < 0.05);
});

test("image decoding: corrupt and unknown files are DataFileErrors naming the file", () => {
  const dir = freshDir();
  const good = png({ width: 4, height: 4, data: new Uint8Array(16).fill(9), channels: 1, depth: 8 });
  const cases: [string, Uint8Array, string][] = [
    ["text.png", new TextEncoder().encode("hello, I am not a picture"), "not a PNG or JPEG file"],
    ["empty.jpg", new Uint8Array(0), "an empty file"],
    ["cut.png", good.subarray(0, 30), "corrupt PNG"],
    ["flipped.png", Uint8Array.from(good, (b, i) => (i > 40 && i < 50 ? b ^ 0xff : b)), "corrupt PNG"],
    ["cut.jpg", jpegOf(8, 8, () => [1, 2, 3]).subarray(0, 20), "corrupt JPEG"],
  ];
  for (const [name, bytes, why] of cases) {
    writeFileSync(join(dir, name), bytes);
    throwsDataError(() => readImage(join(dir, name)), join(dir, name), why);
  }
});

test("gray ↔ RGB conversion and resizing", () => {
  const rgb = { width: 1, height: 1, channels: 3 as const, data: Float32Array.from([1, 0.5, 0.25]) };
  assert.ok(Math.abs(toChannels(rgb, 1).data[0] - (0.299 + 0.587 * 0.5 + 0.114 * 0.25)) < 1e-7);
  const gray = { width: 2, height: 1, channels: 1 as const, data: Float32Array.from([0.1, 0.7]) };
  assert.deepEqual(Array.from(toChannels(gray, 3).data), Array.from(Float32Array.from([0.1, 0.1, 0.1, 0.7, 0.7, 0.7])));
  // Bilinear 2×2 → 4×4 with aligned centers: PyTorch's interpolate(align_corners=False) values.
  const small = { width: 2, height: 2, channels: 1 as const, data: Float32Array.from([0, 1, 2, 3]) };
  assert.deepEqual(Array.from(resizeImage(small, 4, 4, "bilinear").data), [
    0, 0.25, 0.75, 1, 0.5, 0.75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3,
  ]);
  const big = { width: 4, height: 4, channels: 1 as const, data: Float32Array.from({ length: 16 }, (_, i) => i) };
  assert.deepEqual(Array.from(resizeImage(big, 2, 2, "nearest").data), [5, 7, 13, 15]);
  assert.deepEqual(Array.from(resizeImage(big, 2, 2, "bilinear").data), [2.5, 4.5, 10.5, 12.5]);
});

/** A class folder tree: cat (2 gray PNGs, one nested), dog (a gray JPEG), 5×4 each. */
function writeFolder(dir: string, opts: { color?: boolean; oddSize?: boolean } = {}): void {
  for (const c of ["dog", "cat", ".hidden"]) mkdirSync(join(dir, c, "more"), { recursive: true });
  const gray = (v: number, w = 4, h = 5) => png({ width: w, height: h, data: new Uint8Array(w * h).fill(v), channels: 1, depth: 8 });
  writeFileSync(join(dir, "cat", "b.png"), gray(51));
  writeFileSync(join(dir, "cat", "more", "a.png"), gray(102, opts.oddSize ? 6 : 4));
  writeFileSync(join(dir, "cat", "notes.txt"), "skipped");
  writeFileSync(join(dir, "cat", ".DS_Store"), "skipped");
  writeFileSync(join(dir, ".hidden", "x.png"), gray(1));
  writeFileSync(join(dir, "dog", "d.JPG"), opts.color ? jpegOf(4, 5, () => [255, 0, 0]) : jpegOf(4, 5, () => [204, 204, 204]));
}

test("image folder: sorted classes, recursive files, default channels, size checks", () => {
  const dir = freshDir();
  writeFolder(dir);
  const set = readImageFolder(dir);
  assert.deepEqual(set.classes, ["cat", "dog"]);
  assert.deepEqual(Array.from(set.labels), [0, 0, 1]);
  assert.deepEqual([set.count, set.height, set.width, set.channels], [3, 5, 4, 1]);
  assert.equal(set.pixels[0], Math.fround(0.2)); // cat/b.png sorts before cat/more/a.png
  assert.equal(set.pixels[20], Math.fround(0.4));
  assert.ok(Math.abs(set.pixels[40] - 0.8) < 0.01);
  const rgb = readImageFolder(dir, { channels: 3 });
  assert.equal(rgb.channels, 3);
  assert.equal(rgb.pixels.length, 3 * 3 * 20);
  assert.deepEqual([rgb.pixels[0], rgb.pixels[20], rgb.pixels[40]], [0.2, 0.2, 0.2].map(Math.fround)); // planar: the three planes of image 0

  const color = freshDir();
  writeFolder(color, { color: true });
  const c = readImageFolder(color);
  assert.equal(c.channels, 3, "one color image makes the folder RGB");
  assert.equal(c.pixels[0], Math.fround(0.2)); // a gray image replicated: R plane
  const red = 2 * 60; // image 2, R plane
  assert.ok(c.pixels[red] > 0.95 && c.pixels[red + 20] < 0.05 && c.pixels[red + 40] < 0.05);
  const asGray = readImageFolder(color, { channels: 1 });
  assert.ok(Math.abs(asGray.pixels[40] - 0.299) < 0.02, "red by luminance");

  const odd = freshDir();
  writeFolder(odd, { oddSize: true });
  throwsDataError(() => readImageFolder(odd), join("cat", "more", "a.png"), "image is 5×6", "expected 5×4", "give a size");
  const resized = readImageFolder(odd, { size: { height: 8, width: 8 }, resize: "nearest" });
  assert.deepEqual([resized.height, resized.width], [8, 8]);
  assert.equal(resized.pixels[64], Math.fround(0.4));
  assert.throws(() => readImageFolder(odd, { size: { height: 0, width: 8 } }), UsageError);

  const corrupt = freshDir();
  writeFolder(corrupt);
  writeFileSync(join(corrupt, "dog", "broken.png"), "garbage");
  throwsDataError(() => readImageFolder(corrupt), join(corrupt, "dog", "broken.png"));
  const noClasses = freshDir();
  assert.throws(() => readImageFolder(noClasses), /no class folders/);
  mkdirSync(join(noClasses, "empty"));
  assert.throws(() => readImageFolder(noClasses), /no .png, .jpg or .jpeg files/);
});

test("image folder: seeded stratified split, standardized from training images", () => {
  const dir = freshDir();
  for (const [c, n] of [["a", 10], ["b", 20], ["c", 5]] as const) {
    mkdirSync(join(dir, c));
    for (let i = 0; i < n; i++) {
      writeFileSync(join(dir, c, `${String(i).padStart(2, "0")}.png`), png({ width: 2, height: 2, data: new Uint8Array(4).fill(i * 10 + c.charCodeAt(0)), channels: 1, depth: 8 }));
    }
  }
  const d = loadImageFolder(dir, { evalFraction: 0.2, seed: 3 });
  assert.deepEqual(classCounts(d.eval), [2, 4, 1]);
  assert.deepEqual(classCounts(d.train), [8, 16, 4]);
  const again = loadImageFolder(dir, { evalFraction: 0.2, seed: 3 });
  assert.deepEqual(again.eval.pixels, d.eval.pixels);
  const other = loadImageFolder(dir, { evalFraction: 0.2, seed: 4 });
  assert.notDeepEqual(other.eval.pixels, d.eval.pixels);
  const raw = readImageFolder(dir);
  assert.deepEqual(d.normalization, computeNormalization(splitByFraction(raw, 0.2, 3).train));
  // The two splits partition the set.
  const all = splitByFraction(raw, 0.2, 3);
  const values = (s: ImageSet) => Array.from({ length: s.count }, (_, i) => s.pixels[4 * i]);
  assert.deepEqual([...values(all.train), ...values(all.eval)].sort(), values(raw).sort());
  assert.throws(() => loadImageFolder(dir, { evalFraction: 1.5 }), UsageError);
  // One image as a model input, standardized like the training data.
  const one = loadImage(join(dir, "a", "00.png"), { size: { height: 2, width: 2 }, channels: 3, normalization: { mean: [0, 0, 0.5], std: [1, 1, 0.5] } });
  assert.equal(one.length, 12);
  assert.ok(Math.abs(one[0] - 97 / 255) < 1e-6 && Math.abs(one[8] - (97 / 255 - 0.5) / 0.5) < 1e-6);
});

// ---- batches and augmentation -----------------------------------------------------------

/** N images of 1×3×3 whose pixels all hold the image's index; label i mod 4. */
function indexedSet(N: number, H = 3, W = 3): ImageSet {
  const pixels = new Float32Array(N * H * W);
  for (let i = 0; i < N; i++) pixels.fill(i, i * H * W, (i + 1) * H * W);
  return { count: N, height: H, width: W, channels: 1, pixels, labels: Int32Array.from({ length: N }, (_, i) => i % 4), classes: ["a", "b", "c", "d"], normalization: null };
}
const ids = (b: { pixels: Float32Array; size: number }) => Array.from({ length: b.size }, (_, i) => b.pixels[(i * b.pixels.length) / b.size]);

test("batches: each epoch a seeded permutation, deterministic for a seed", () => {
  const set = indexedSet(12);
  const run = (seed: number, n: number) => { const it = new ImageBatches(set, { batchSize: 4, seed }); return Array.from({ length: n }, () => it.next()); };
  const a = run(7, 9), b = run(7, 9), c = run(8, 9);
  assert.deepEqual(a.map(ids), b.map(ids));
  assert.notDeepEqual(a.map(ids), c.map(ids));
  for (let e = 0; e < 3; e++) {
    const epoch = a.slice(3 * e, 3 * e + 3);
    assert.deepEqual(epoch.flatMap(ids).sort((x, y) => x - y), Array.from({ length: 12 }, (_, i) => i), `epoch ${e} visits every image once`);
    assert.deepEqual(epoch.map((x) => x.start), [0, 4, 8].map((index) => ({ epoch: e, index })));
  }
  assert.notDeepEqual(a.slice(0, 3).flatMap(ids), a.slice(3, 6).flatMap(ids), "epochs differ in order");
  for (const x of a) assert.deepEqual(Array.from(x.labels), ids(x).map((i) => i % 4));
  // In order, and the remainder of an epoch skipped (every batch is full).
  const ordered = new ImageBatches(indexedSet(10), { batchSize: 4, shuffle: false });
  assert.deepEqual([ordered.next(), ordered.next(), ordered.next()].map(ids), [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]);
  assert.deepEqual(ordered.state, { epoch: 1, index: 4 });
  assert.equal(ordered.batchesPerEpoch, 2);
  // Evaluation batches: all of the set, the last batch short.
  assert.deepEqual([...batchesInOrder(indexedSet(10), 4)].map(ids), [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]);
  assert.throws(() => new ImageBatches(set, { batchSize: 13 }), RangeError);
});

test("batches: a saved state resumes exactly, augmentation included", () => {
  const set = indexedSet(10, 6, 6);
  const options = { batchSize: 3, seed: 11, augment: { maxShift: 2 } };
  const straight = new ImageBatches(set, options);
  const all = Array.from({ length: 10 }, () => straight.next());
  const first = new ImageBatches(set, options);
  for (let i = 0; i < 4; i++) first.next();
  const saved = JSON.parse(JSON.stringify(first.state)) as { epoch: number; index: number };
  assert.deepEqual(saved, { epoch: 1, index: 3 });
  const resumed = new ImageBatches(set, { ...options, state: saved });
  for (let i = 4; i < 10; i++) {
    const b = resumed.next();
    assert.deepEqual(b.pixels, all[i].pixels, `batch ${i}`);
    assert.deepEqual(b.labels, all[i].labels);
  }
  const setLater = new ImageBatches(set, options);
  setLater.state = all[7].start;
  assert.deepEqual(setLater.next().pixels, all[7].pixels);
  assert.throws(() => { setLater.state = { epoch: 0, index: 11 }; }, RangeError);
  assert.throws(() => { setLater.state = { epoch: -1, index: 0 }; }, RangeError);
});

test("augmentation: seeded shifts within ±k, black fill, off by default", () => {
  // One lit pixel in the middle of a 9×9 image, standardized so black is −mean/std.
  const H = 9, W = 9, N = 40;
  const pixels = new Float32Array(N * H * W);
  for (let i = 0; i < N; i++) pixels[i * H * W + 4 * W + 4] = 1;
  const raw: ImageSet = { count: N, height: H, width: W, channels: 1, pixels, labels: new Int32Array(N), classes: ["x"], normalization: null };
  const norm = { mean: [0.2], std: [0.5] };
  const set = normalize(raw, norm);
  const black = -0.2 / 0.5, lit = (1 - 0.2) / 0.5;
  const a = randomTranslate(set.pixels, set, 2, new Rng(5)), b = randomTranslate(set.pixels, set, 2, new Rng(5));
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, randomTranslate(set.pixels, set, 2, new Rng(6)));
  const shifts = new Set<string>();
  for (let i = 0; i < N; i++) {
    const img = a.subarray(i * H * W, (i + 1) * H * W);
    const at = img.findIndex((v) => Math.abs(v - lit) < 1e-6);
    assert.ok(at >= 0, `image ${i} keeps its lit pixel`);
    const dy = Math.floor(at / W) - 4, dx = (at % W) - 4;
    assert.ok(Math.abs(dy) <= 2 && Math.abs(dx) <= 2, `shift (${dy}, ${dx}) within ±2`);
    shifts.add(`${dy},${dx}`);
    assert.equal(img.filter((v) => Math.abs(v - black) < 1e-6).length, H * W - 1);
  }
  assert.ok(shifts.size > 10, `shifts vary (${shifts.size} distinct)`);
  // At the border, what moves in is black: an all-white image keeps a (H − |dy|) × (W − |dx|) white block.
  const whites = normalize({ ...raw, pixels: new Float32Array(N * H * W).fill(1) }, norm);
  const moved = randomTranslate(whites.pixels, whites, 3, new Rng(1));
  let shiftedSome = false;
  for (let i = 0; i < N; i++) {
    const img = moved.subarray(i * H * W, (i + 1) * H * W);
    const white = img.filter((v) => Math.abs(v - lit) < 1e-6).length, dark = img.filter((v) => Math.abs(v - black) < 1e-6).length;
    assert.equal(white + dark, H * W);
    const rows = new Set(Array.from(img.keys()).filter((k) => Math.abs(img[k] - lit) < 1e-6).map((k) => Math.floor(k / W)));
    assert.ok(rows.size >= H - 3 && white % rows.size === 0 && white / rows.size >= W - 3, `image ${i}: ${white} white pixels in ${rows.size} rows`);
    if (dark > 0) shiftedSome = true;
  }
  assert.ok(shiftedSome);
  // Off by default and with maxShift 0.
  const plain = new ImageBatches(set, { batchSize: 8, seed: 1 }).next();
  const zero = new ImageBatches(set, { batchSize: 8, seed: 1, augment: { maxShift: 0 } }).next();
  assert.deepEqual(plain.pixels, zero.pixels);
  const augmented = new ImageBatches(set, { batchSize: 8, seed: 1, augment: { maxShift: 2 } }).next();
  assert.deepEqual(augmented.labels, plain.labels);
  assert.notDeepEqual(augmented.pixels, plain.pixels);
});

// ---- MNIST itself -----------------------------------------------------------------------

const mnist = sharedData("mnist");

test("conformance: MNIST's 10,000 test digits, split 8,000 + 2,000", { skip: mnist.skip }, () => {
  const started = performance.now();
  const d = loadMnistDir(mnist.dir);
  const ms = performance.now() - started;
  console.log(`loadMnistDir(${mnist.dir}): ${ms.toFixed(0)} ms; ${d.description}; normalization ${JSON.stringify(d.normalization)}`);
  assert.deepEqual([d.train.count, d.eval.count], [8000, 2000]);
  for (const s of [d.train, d.eval]) assert.deepEqual([s.height, s.width, s.channels, s.pixels.length], [28, 28, 1, s.count * 784]);
  assert.deepEqual(d.train.classes, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
  // t10k's well-known class counts, split between the two.
  const counts = classCounts(d.train).map((n, i) => n + classCounts(d.eval)[i]);
  assert.deepEqual(counts, [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]);
  for (const n of classCounts(d.eval)) assert.ok(n > 150 && n < 250, `eval class count ${n}`);
  // The first digit of t10k is a 7; the first evaluation digit is image 8000.
  assert.equal(d.train.labels[0], 7);
  const raw = readIdx(join(mnist.dir, "t10k-labels-idx1-ubyte.gz")).data;
  assert.equal(d.eval.labels[0], raw[8000]);
  // MNIST's statistics (about mean 0.13, std 0.31), computed, not assumed.
  assert.ok(Math.abs(d.normalization!.mean[0] - 0.1307) < 0.005 && Math.abs(d.normalization!.std[0] - 0.3081) < 0.005, JSON.stringify(d.normalization));
  const raw01 = loadMnistDir(mnist.dir, { normalize: false });
  assert.ok(raw01.train.pixels.every((v) => v >= 0 && v <= 1));
  assert.equal(Math.max(...raw01.train.pixels.subarray(0, 784)), 1);
  // A training epoch of batches of 64.
  const it = new ImageBatches(d.train, { batchSize: 64, seed: 0, augment: { maxShift: 2 } });
  assert.equal(it.batchesPerEpoch, 125);
  const b = it.next();
  assert.deepEqual([b.pixels.length, b.labels.length], [64 * 784, 64]);
  assert.ok(ms < 10_000, `loading took ${ms} ms`);
});
