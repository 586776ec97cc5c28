// The KV cache in GPU memory (the webgpu backend's, see blocks/gpuOps.ts): per layer, one
// buffer of keys and one of values, `capacity` rows of kvHeads · headDim values, stored as f32
// or f16 (two halves per u32 word). Row j holds position j: every position is kept, also on
// sliding-window layers (the attention kernel masks by the window), so truncating never loses
// what a continuation needs. Q8_0 caches are not supported on webgpu (refused at load).

import type { GpuRuntime, Recorder } from "../backends/webgpu/runtime.js";
import { storeF16, type GpuKVType } from "../backends/webgpu/storeKV.js";
import { ToyError } from "../errors.js";
import { KVCache } from "./kvCache.js";

export class GpuKVCache extends KVCache {
  readonly keys: GPUBuffer[];
  readonly values: GPUBuffer[];
  private readonly valueBytes: number;

  constructor(private readonly rt: GpuRuntime, nLayers: number, capacity: number, readonly width: number, readonly gpuType: GpuKVType) {
    super(0, capacity, width, { type: gpuType }); // no host layers: truncate keeps any length
    this.valueBytes = gpuType === "f32" ? 4 : 2;
    const bytes = capacity * width * this.valueBytes;
    this.keys = Array.from({ length: nLayers }, (_, l) => rt.buffer(bytes, `keys of layer ${l}`));
    this.values = Array.from({ length: nLayers }, (_, l) => rt.buffer(bytes, `values of layer ${l}`));
  }

  override get bytes(): number {
    return (this.keys.length + this.values.length) * this.capacity * this.width * this.valueBytes;
  }

  /** Record: rows [start, start + T) of k and v [*, width] go to positions pos0.. of layer l. */
  write(rec: Recorder, l: number, k: GPUBuffer, v: GPUBuffer, start: number, T: number, pos0: number): void {
    const n = T * this.width;
    if (this.gpuType === "f32") {
      rec.copy(k, start * this.width * 4, this.keys[l], pos0 * this.width * 4, n * 4);
      rec.copy(v, start * this.width * 4, this.values[l], pos0 * this.width * 4, n * 4);
      return;
    }
    storeF16(rec, k, start * this.width, n, this.keys[l], pos0 * this.width);
    storeF16(rec, v, start * this.width, n, this.values[l], pos0 * this.width);
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
    const bytes = n * this.width * this.valueBytes;
    if (from === this || n === 0 || n > from.length || n > this.capacity || bytes % 4 !== 0) return false;
    const encoder = this.rt.device.createCommandEncoder();
    for (let l = 0; l < this.keys.length; l++) {
      encoder.copyBufferToBuffer(from.keys[l], 0, this.keys[l], 0, bytes);
      encoder.copyBufferToBuffer(from.values[l], 0, this.values[l], 0, bytes);
    }
    this.rt.device.queue.submit([encoder.finish()]);
    this.length = n;
    return true;
  }

  /** Free the GPU memory now (it is also freed when the cache is collected). */
  dispose(): void {
    for (const b of [...this.keys, ...this.values]) b.destroy();
  }
}
