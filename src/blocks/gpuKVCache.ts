// The KV cache in GPU memory (the webgpu backend's, see blocks/gpuOps.ts): per layer, one
// buffer of keys and one of values, `capacity` rows of kvHeads · headDim values, stored as f32,
// f16 (two halves per u32 word) or q8_0 (int8 values, four per word, and a buffer of one f32
// scale per block of 32: backends/webgpu/storeKV.ts). Row j holds position j: every position is
// kept, also on sliding-window layers (the attention kernel masks by the window), so truncating
// never loses what a continuation needs.

import type { GpuRuntime, Recorder } from "../backends/webgpu/runtime.js";
import { storeF16, storeQ8_0, type GpuKVType, type Q8Buffers } from "../backends/webgpu/storeKV.js";
import { ToyError } from "../errors.js";
import { KVCache } from "./kvCache.js";

/** Bytes per cached value in each type (q8_0: one int8, plus a 4-byte scale per 32). */
const VALUE_BYTES: Record<GpuKVType, number> = { f32: 4, f16: 2, q8_0: 1 };

export class GpuKVCache extends KVCache {
  readonly keys: GPUBuffer[];
  readonly values: GPUBuffer[];
  /** q8_0: the blocks' scales, per layer (empty for f32 and f16). */
  readonly keyScales: GPUBuffer[] = [];
  readonly valueScales: GPUBuffer[] = [];

  constructor(private readonly rt: GpuRuntime, nLayers: number, capacity: number, readonly width: number, readonly gpuType: GpuKVType) {
    super(0, capacity, width, { type: gpuType }); // no host layers: truncate keeps any length
    const bytes = capacity * width * VALUE_BYTES[gpuType];
    this.keys = Array.from({ length: nLayers }, (_, l) => rt.buffer(bytes, `keys of layer ${l}`));
    this.values = Array.from({ length: nLayers }, (_, l) => rt.buffer(bytes, `values of layer ${l}`));
    if (gpuType === "q8_0") {
      const scaleBytes = (capacity * width / 32) * 4;
      this.keyScales = Array.from({ length: nLayers }, (_, l) => rt.buffer(scaleBytes, `key scales of layer ${l}`));
      this.valueScales = Array.from({ length: nLayers }, (_, l) => rt.buffer(scaleBytes, `value scales of layer ${l}`));
    }
  }

  override get bytes(): number {
    const scales = this.gpuType === "q8_0" ? 4 / 32 : 0;
    return (this.keys.length + this.values.length) * this.capacity * this.width * (VALUE_BYTES[this.gpuType] + scales);
  }

  /** Layer l's q8_0 buffers. */
  q8(l: number): Q8Buffers {
    return { keys: this.keys[l], values: this.values[l], keyScales: this.keyScales[l], valueScales: this.valueScales[l] };
  }

  /** Record: rows [start, start + T) of k and v [*, width] go to positions pos0.. of layer l. */
  write(rec: Recorder, l: number, k: GPUBuffer, v: GPUBuffer, start: number, T: number, pos0: number): void {
    const n = T * this.width;
    if (this.gpuType === "f32") {
      rec.copy(k, start * this.width * 4, this.keys[l], pos0 * this.width * 4, n * 4);
      rec.copy(v, start * this.width * 4, this.values[l], pos0 * this.width * 4, n * 4);
    } else if (this.gpuType === "f16") {
      storeF16(rec, k, v, start * this.width, n, this.keys[l], this.values[l], pos0 * this.width);
    } else {
      storeQ8_0(rec, k, v, start * this.width, n, this.q8(l), pos0 * this.width);
    }
  }

  /**
   * Hold the first `n` positions of `from` (see KVCache.copyPrefix): one buffer copy per layer's
   * keys and values, submitted now, so the queue runs it after every forward already submitted
   * (which wrote those positions) and before the next. Returns false, copying nothing, when
   * `from` holds fewer or the rows are not whole 4-byte words (copyBufferToBuffer's unit).
   */
  override copyPrefix(from: KVCache, n: number): boolean {
    if (!(from instanceof GpuKVCache) || from.width !== this.width || from.gpuType !== this.gpuType || from.keys.length !== this.keys.length) {
      throw new ToyError("webgpu: copying KV rows from a cache of another shape or type");
    }
    const bytes = n * this.width * VALUE_BYTES[this.gpuType];
    if (from === this || n === 0 || n > from.length || n > this.capacity || bytes % 4 !== 0) return false;
    const scaleBytes = (n * this.width / 32) * 4; // q8_0: one scale per 32 values (width is a multiple of 32)
    const encoder = this.rt.device.createCommandEncoder();
    for (let l = 0; l < this.keys.length; l++) {
      encoder.copyBufferToBuffer(from.keys[l], 0, this.keys[l], 0, bytes);
      encoder.copyBufferToBuffer(from.values[l], 0, this.values[l], 0, bytes);
      if (this.gpuType === "q8_0") {
        encoder.copyBufferToBuffer(from.keyScales[l], 0, this.keyScales[l], 0, scaleBytes);
        encoder.copyBufferToBuffer(from.valueScales[l], 0, this.valueScales[l], 0, scaleBytes);
      }
    }
    this.rt.device.queue.submit([encoder.finish()]);
    this.length = n;
    return true;
  }

  /** Free the GPU memory now (it is also freed when the cache is collected). */
  dispose(): void {
    for (const b of [...this.keys, ...this.values, ...this.keyScales, ...this.valueScales]) b.destroy();
  }
}
