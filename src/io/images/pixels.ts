// Pixel conversions of a decoded image: gray ↔ RGB, resizing, and the interleaved-to-planar
// copy into a dataset row.

import type { DecodedImage } from "./decode.js";

export type ResizeMethod = "bilinear" | "nearest";

/** True when the image carries no color: one channel, or R = G = B at every pixel (as a gray JPEG decodes). */
export function isGray(img: DecodedImage): boolean {
  if (img.channels === 1) return true;
  const d = img.data;
  for (let i = 0; i < d.length; i += 3) if (d[i] !== d[i + 1] || d[i] !== d[i + 2]) return false;
  return true;
}

/**
 * The image with `channels` channels: RGB → gray by luminance (ITU-R BT.601 weights
 * 0.299 R + 0.587 G + 0.114 B, PIL's "L"), gray → RGB by copying the value to all three.
 */
export function toChannels(img: DecodedImage, channels: 1 | 3): DecodedImage {
  if (img.channels === channels) return img;
  const n = img.width * img.height, src = img.data, data = new Float32Array(n * channels);
  if (channels === 1) {
    for (let p = 0; p < n; p++) data[p] = 0.299 * src[3 * p] + 0.587 * src[3 * p + 1] + 0.114 * src[3 * p + 2];
  } else {
    for (let p = 0; p < n; p++) data[3 * p] = data[3 * p + 1] = data[3 * p + 2] = src[p];
  }
  return { ...img, channels, data };
}

/**
 * The image resampled to height × width. Pixel centers are aligned (PyTorch's
 * align_corners = false): output pixel y samples input row (y + ½)·inH/outH − ½.
 * "bilinear" interpolates the four nearest pixels (clamped at the border; no antialiasing, so a
 * large reduction aliases); "nearest" takes the pixel under the sample point.
 */
export function resizeImage(img: DecodedImage, height: number, width: number, method: ResizeMethod): DecodedImage {
  if (img.height === height && img.width === width) return img;
  const { channels: C, data: src } = img, inH = img.height, inW = img.width;
  const data = new Float32Array(height * width * C);
  const sy = inH / height, sx = inW / width;
  for (let y = 0; y < height; y++) {
    const fy = Math.min(Math.max((y + 0.5) * sy - 0.5, 0), inH - 1);
    for (let x = 0; x < width; x++) {
      const fx = Math.min(Math.max((x + 0.5) * sx - 0.5, 0), inW - 1);
      const out = (y * width + x) * C;
      if (method === "nearest") {
        const at = (Math.min(Math.floor((y + 0.5) * sy), inH - 1) * inW + Math.min(Math.floor((x + 0.5) * sx), inW - 1)) * C;
        for (let c = 0; c < C; c++) data[out + c] = src[at + c];
        continue;
      }
      const y0 = Math.floor(fy), x0 = Math.floor(fx), y1 = Math.min(y0 + 1, inH - 1), x1 = Math.min(x0 + 1, inW - 1);
      const wy = fy - y0, wx = fx - x0;
      for (let c = 0; c < C; c++) {
        const top = src[(y0 * inW + x0) * C + c] * (1 - wx) + src[(y0 * inW + x1) * C + c] * wx;
        const bottom = src[(y1 * inW + x0) * C + c] * (1 - wx) + src[(y1 * inW + x1) * C + c] * wx;
        data[out + c] = top * (1 - wy) + bottom * wy;
      }
    }
  }
  return { ...img, height, width, data };
}

/** Copy an interleaved [H, W, C] image into `out` at `offset` as planar [C, H, W]. */
export function writePlanar(img: DecodedImage, out: Float32Array, offset: number): void {
  const { channels: C, data } = img, plane = img.height * img.width;
  for (let p = 0; p < plane; p++) for (let c = 0; c < C; c++) out[offset + c * plane + p] = data[p * C + c];
}
