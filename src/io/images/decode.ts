// PNG (fast-png) and JPEG (jpeg-js) files as float pixels in [0, 1]. The format is told by the
// file's signature, not its name. Every PNG color type and bit depth is read: palettes are
// expanded to RGB, 1/2/4-bit samples unpacked, 16-bit samples scaled by 65535. Alpha is
// dropped, not composited (as PIL's convert("RGB") does); a JPEG decodes to RGB.

import { readFileSync } from "node:fs";
import { decode as decodePngBytes, type DecodedPng } from "fast-png";
import { decode as decodeJpegBytes } from "jpeg-js";
import { DataFileError } from "../../errors.js";

export interface DecodedImage {
  width: number;
  height: number;
  /** 1 (gray) or 3 (RGB): what the file stores, without alpha. */
  channels: 1 | 3;
  /** [H, W, channels], interleaved as in the file, in [0, 1] */
  data: Float32Array;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const startsWith = (bytes: Uint8Array, sig: number[]) => bytes.length >= sig.length && sig.every((b, i) => bytes[i] === b);

/** Read and decode a PNG or JPEG file. */
export function readImage(path: string): DecodedImage {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new DataFileError(`${path}: cannot read (${code === "ENOENT" ? "no such file" : code ?? String(e)})`);
  }
  return decodeImage(bytes, path);
}

/** Decode the bytes of a PNG or JPEG file; a corrupt one is a DataFileError naming `path`. */
export function decodeImage(bytes: Uint8Array, path = "<image>"): DecodedImage {
  const isPng = startsWith(bytes, PNG_SIGNATURE), isJpeg = startsWith(bytes, [0xff, 0xd8, 0xff]);
  if (!isPng && !isJpeg) {
    const head = [...bytes.subarray(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    throw new DataFileError(`${path}: not a PNG or JPEG file (signature: expected 89 50 4e 47 … or ff d8 ff, found ${head || "an empty file"})`);
  }
  let image: DecodedImage;
  try {
    image = isPng ? fromPng(decodePngBytes(bytes)) : fromJpeg(bytes);
  } catch (e) {
    throw new DataFileError(`${path}: corrupt ${isPng ? "PNG" : "JPEG"} (${(e as Error).message})`);
  }
  if (image.width === 0 || image.height === 0) throw new DataFileError(`${path}: image is ${image.width}×${image.height}, expected at least 1×1`);
  return image;
}

function fromPng(png: DecodedPng): DecodedImage {
  const { width, height, depth } = png;
  if (png.palette) {
    // Indexed color: one index per pixel into a table of [r, g, b(, a)] bytes.
    const index = unpackSamples(png.data, width, height, 1, depth);
    const data = new Float32Array(width * height * 3);
    for (let i = 0; i < index.length; i++) {
      const entry = png.palette[index[i]];
      if (!entry) throw new Error(`palette index ${index[i]} out of range (${png.palette.length} colors)`);
      for (let c = 0; c < 3; c++) data[3 * i + c] = entry[c] / 255;
    }
    return { width, height, channels: 3, data };
  }
  const stored = png.channels; // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
  if (stored < 1 || stored > 4) throw new Error(`${stored} channels`);
  const samples = unpackSamples(png.data, width, height, stored, depth);
  const channels: 1 | 3 = stored <= 2 ? 1 : 3;
  const max = 2 ** depth - 1;
  const data = new Float32Array(width * height * channels);
  for (let p = 0; p < width * height; p++) {
    for (let c = 0; c < channels; c++) data[p * channels + c] = samples[p * stored + c] / max;
  }
  return { width, height, channels, data };
}

/** One sample per array element: 8- and 16-bit data already is; 1/2/4-bit rows are packed, each padded to a byte. */
function unpackSamples(data: ArrayLike<number>, width: number, height: number, channels: number, depth: number): ArrayLike<number> {
  const perRow = width * channels;
  if (depth >= 8) {
    if (data.length < perRow * height) throw new Error(`${data.length} samples, expected ${perRow * height}`);
    return data;
  }
  const rowBytes = Math.ceil((perRow * depth) / 8), mask = (1 << depth) - 1;
  if (data.length < rowBytes * height) throw new Error(`${data.length} bytes of ${depth}-bit samples, expected ${rowBytes * height}`);
  const out = new Uint8Array(perRow * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < perRow; x++) {
      const bit = x * depth;
      out[y * perRow + x] = (data[y * rowBytes + (bit >> 3)] >> (8 - depth - (bit & 7))) & mask;
    }
  }
  return out;
}

function fromJpeg(bytes: Uint8Array): DecodedImage {
  const { width, height, data: rgb } = decodeJpegBytes(bytes, { useTArray: true, formatAsRGBA: false });
  const data = new Float32Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = rgb[i] / 255;
  return { width, height, channels: 3, data };
}
