// The KV cache: for every layer, the keys and values of all positions seen so far, so that a
// new token attends to the past without recomputing it.

import { ToyError } from "../errors.js";
import type { Tensor } from "../tensor/tensor.js";

export class LayerCache {
  /** [capacity, kvHeads · headDim] each */
  readonly k: Float32Array;
  readonly v: Float32Array;
  constructor(readonly capacity: number, readonly width: number) {
    this.k = new Float32Array(capacity * width);
    this.v = new Float32Array(capacity * width);
  }

  /** Store T rows of keys and values at positions pos0..pos0+T−1. */
  write(pos0: number, k: Tensor, v: Tensor): void {
    this.k.set(k.data, pos0 * this.width);
    this.v.set(v.data, pos0 * this.width);
  }
}

export class KVCache {
  readonly layers: LayerCache[];
  /** Number of positions filled. */
  length = 0;

  constructor(nLayers: number, readonly capacity: number, kvWidths: number | number[]) {
    this.layers = Array.from({ length: nLayers }, (_, l) => new LayerCache(capacity, Array.isArray(kvWidths) ? kvWidths[l] : kvWidths));
  }

  /** Check that T more positions fit; the context limit gets a clear error. */
  reserve(T: number): void {
    if (this.length + T > this.capacity) {
      throw new ToyError(`context length exceeded: ${this.length} + ${T} tokens > context of ${this.capacity}`);
    }
  }

  /** Forget positions from `length` on (e.g. to reuse a shared prefix). */
  truncate(length: number): void {
    this.length = Math.min(this.length, length);
  }

  get bytes(): number {
    return this.layers.reduce((s, l) => s + l.k.byteLength + l.v.byteLength, 0);
  }
}

/**
 * A batch's rows, sequence by sequence: rows [start, start + length) of the batch continue
 * the sequence held in `cache` from position cache.length. One sequence for a prompt; many
 * one-row sequences when a server steps several conversations at once.
 */
export interface Segment {
  /** null: a sequence seen whole in one forward, attending to its own rows (a ViT's image). */
  cache: KVCache | null;
  start: number;
  length: number;
  /** Position of the segment's first row (cache.length before the forward). */
  pos0: number;
}
