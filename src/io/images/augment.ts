// Random translation, the augmentation that lets a small model reach high MNIST accuracy from
// few digits: each image moves by a whole number of pixels, up to ±maxShift in each direction,
// drawn independently per image; what moves in at the border is black (a [0, 1] zero, i.e.
// −mean/std once standardized).

import type { Rng } from "../../data/rng.js";
import { normalizedZero } from "./normalize.js";
import type { ImageSet } from "./imageSet.js";

export interface Augmentation {
  /** The largest shift, in pixels, along each axis (0 turns it off). */
  maxShift: number;
}

type Shape = Pick<ImageSet, "channels" | "height" | "width" | "normalization">;

/** [B, C·H·W] → [B, C·H·W], each image shifted by (dy, dx) drawn uniformly from [−k, k]². */
export function randomTranslate(pixels: Float32Array, shape: Shape, maxShift: number, rng: Rng): Float32Array {
  const { channels: C, height: H, width: W } = shape, plane = H * W, size = C * plane;
  const out = new Float32Array(pixels.length);
  const fill = Array.from({ length: C }, (_, c) => normalizedZero(shape.normalization, c));
  const span = 2 * maxShift + 1;
  for (let b = 0; b * size < pixels.length; b++) {
    const dy = Math.floor(rng.next() * span) - maxShift, dx = Math.floor(rng.next() * span) - maxShift;
    for (let c = 0; c < C; c++) {
      const base = b * size + c * plane;
      for (let y = 0; y < H; y++) {
        const sy = y - dy; // output row y shows input row y − dy
        for (let x = 0; x < W; x++) {
          const sx = x - dx;
          out[base + y * W + x] = sy >= 0 && sy < H && sx >= 0 && sx < W ? pixels[base + sy * W + sx] : fill[c];
        }
      }
    }
  }
  return out;
}
