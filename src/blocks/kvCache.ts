// The KV cache: for every layer, the keys and values of the positions seen so far, so that a
// new token attends to the past without recomputing it. Rows are stored in the cache's type
// (f32, f16 or q8_0, see kvCacheTypes.ts), which the attention kernels read directly.
//
// A sliding-window layer (its queries see only the last `window` positions) keeps only those:
// its rows hold positions [base, base + rows), and before a forward it drops the positions no
// query of that forward can see, moving the rest to the front when it runs out of rows. It holds
// at most window − 1 + (the forward's rows) + SLACK positions, however long the context grows.
// Attention is shift-invariant (RoPE is applied before caching), so the kernels see row i as
// position i and query positions shifted by −base; the window mask is the same.

import type { KVRows } from "../backends/kernels.js";
import { ToyError } from "../errors.js";
import type { Tensor } from "../tensor/tensor.js";
import { storeKVPair } from "../primitives/index.js";
import { DEFAULT_KV_TYPE, kvRowBytes, type KVType } from "./kvCacheTypes.js";

/** Rows a windowed layer keeps beyond what a forward needs, so that it moves its rows only once every SLACK steps. */
const SLACK = 64;

export class LayerCache {
  /** Cached keys and values: `rows` rows of `width` values each, stored as `type`. */
  keys: KVRows;
  values: KVRows;
  /** Position held by row 0 (> 0 only on a sliding-window layer that dropped old positions). */
  base = 0;
  /** Bytes of one row (width values as `type`). */
  readonly rowBytes: number;

  /**
   * capacity: the most positions a sequence may reach; window: the layer's sliding window
   * (0: it attends to every position, and keeps them all). storage: zeroed bytes for keys and
   * values, LayerCache.rowsFor(capacity, window) rows each (default: a buffer of its own each).
   */
  constructor(readonly capacity: number, readonly width: number, readonly type: KVType = DEFAULT_KV_TYPE, readonly window = 0,
    storage?: { keys: Uint8Array; values: Uint8Array }) {
    this.rowBytes = kvRowBytes(type, width);
    const rows = LayerCache.rowsFor(capacity, window);
    this.keys = { type, bytes: storage?.keys ?? this.alloc(rows) };
    this.values = { type, bytes: storage?.values ?? this.alloc(rows) };
  }

  /** Rows a layer allocates: every position, or a sliding window's and some slack. */
  static rowsFor(capacity: number, window: number): number {
    return window > 0 ? Math.min(capacity, window + SLACK) : capacity;
  }

  /** Rows allocated. */
  get rows(): number {
    return this.keys.bytes.byteLength / this.rowBytes;
  }

  /** Whether a forward can start at position `pos` (the positions its window needs are still held). */
  canResumeAt(pos: number): boolean {
    return pos === 0 || this.window === 0 || Math.max(0, pos - this.window + 1) >= this.base;
  }

  /**
   * Store T rows of keys and values [T, width] at positions pos0..pos0+T−1; afterwards `keys` and
   * `values` hold positions [base, pos0 + T), including every key the forward's queries may see.
   */
  write(pos0: number, k: Tensor, v: Tensor): void {
    const at = this.prepare(pos0, k.data.length / this.width) * this.rowBytes;
    storeKVPair(k, v, this.type, this.keys.bytes, this.values.bytes, at);
  }

  /**
   * Make room for T rows at positions pos0..pos0+T−1 (a sliding-window layer may drop old
   * positions, move its rows, or take new buffers) and return the row that pos0 goes to. Calling
   * it again with the same arguments changes nothing (a replayed decode step calls it first).
   */
  prepare(pos0: number, T: number): number {
    if (pos0 === 0) this.base = 0; // a fresh start (after truncate(0)) keeps nothing
    if (pos0 + T - this.base > this.rows) this.makeRoom(pos0, T);
    else if (this.window > 0 && this.rows > this.window - 1 + T + 2 * SLACK) this.makeRoom(pos0, T); // shrink after a long prompt
    return pos0 - this.base;
  }

  /** Whether `from` still holds the positions continuing from n needs (this layer's window before n). */
  canCopyPrefix(from: LayerCache, n: number): boolean {
    if (from.width !== this.width || from.type !== this.type || from.window !== this.window) {
      throw new ToyError(`KV cache: copying rows between layers of different shapes (${from.type}×${from.width} to ${this.type}×${this.width})`);
    }
    return this.keepFrom(n) >= from.base && n - from.base <= from.rows;
  }

  /**
   * Hold positions [0, n) of `from` (canCopyPrefix: a layer of the same shape that still holds
   * them) as its own, dropping what this layer held: one copy of their rows for keys and one for
   * values, bytes as `from` stored them. A sliding-window layer copies only its window before n.
   */
  copyPrefix(from: LayerCache, n: number): void {
    const keepFrom = this.keepFrom(n), rows = n - keepFrom;
    if (rows > this.rows) {
      const size = Math.min(this.capacity, rows + SLACK);
      this.keys = { type: this.type, bytes: this.alloc(size) };
      this.values = { type: this.type, bytes: this.alloc(size) };
    }
    const at = (keepFrom - from.base) * this.rowBytes, end = at + rows * this.rowBytes;
    this.keys.bytes.set(from.keys.bytes.subarray(at, end));
    this.values.bytes.set(from.values.bytes.subarray(at, end));
    this.base = keepFrom;
  }

  /** The first position a forward continuing from `pos` may attend to. */
  private keepFrom(pos: number): number {
    return this.window > 0 ? Math.max(0, pos - this.window + 1) : 0;
  }

  /** Keep only positions [pos0 − window + 1, pos0) at the front, in rows enough for T more. */
  private makeRoom(pos0: number, T: number): void {
    if (this.window === 0) throw new ToyError(`KV cache: positions up to ${pos0 + T} do not fit in ${this.rows}`);
    if (!this.canResumeAt(pos0)) throw new ToyError(`KV cache: position ${pos0} needs keys this sliding-window layer no longer holds (from ${this.base})`);
    const keepFrom = Math.max(0, pos0 - this.window + 1);
    const keep = pos0 - keepFrom, need = keep + T;
    const from = (keepFrom - this.base) * this.rowBytes, to = (pos0 - this.base) * this.rowBytes;
    if (need > this.rows || this.rows > need + 2 * SLACK) {
      const rows = Math.min(this.capacity, need + SLACK);
      const k = this.alloc(rows), v = this.alloc(rows);
      k.set(this.keys.bytes.subarray(from, to));
      v.set(this.values.bytes.subarray(from, to));
      this.keys = { type: this.type, bytes: k };
      this.values = { type: this.type, bytes: v };
    } else {
      this.keys.bytes.copyWithin(0, from, to);
      this.values.bytes.copyWithin(0, from, to);
    }
    this.base = keepFrom;
  }

  private alloc(rows: number): Uint8Array {
    // Float32 rows are read as a Float32Array view by the ts backend: allocate whole floats.
    return new Uint8Array(new ArrayBuffer(rows * this.rowBytes));
  }
}

export interface KVCacheOptions {
  /** Storage type of keys and values (default f32). */
  type?: KVType;
  /** Per layer: its sliding window (0 or absent: every position). */
  windows?: readonly number[];
  /**
   * Zeroed bytes for every layer's keys and values together (e.g. hugePageBytes: on huge pages,
   * where decode attention reads them faster); absent: a buffer per layer. Pages become resident
   * as rows are written, 2 MB at a time on huge pages, so this is for a cache about as large as
   * the sequence it will hold.
   */
  storage?: (bytes: number) => Uint8Array;
}

export class KVCache {
  readonly layers: LayerCache[];
  /** Number of positions filled. */
  length = 0;
  readonly type: KVType;

  constructor(nLayers: number, readonly capacity: number, kvWidths: number | readonly number[], opts: KVCacheOptions = {}) {
    this.type = opts.type ?? DEFAULT_KV_TYPE;
    const width = (l: number) => typeof kvWidths === "number" ? kvWidths : kvWidths[l];
    const window = (l: number) => opts.windows?.[l] ?? 0;
    const layerBytes = (l: number) => LayerCache.rowsFor(capacity, window(l)) * kvRowBytes(this.type, width(l));
    const slot = (l: number) => Math.ceil(layerBytes(l) / 64) * 64; // one storage: every buffer from a multiple of 64 bytes
    const all = opts.storage?.(Array.from({ length: nLayers }, (_, l) => 2 * slot(l)).reduce((a, b) => a + b, 0));
    let at = 0; // layer l's keys, then its values
    this.layers = Array.from({ length: nLayers }, (_, l) => {
      const n = layerBytes(l), storage = all && { keys: all.subarray(at, at + n), values: all.subarray(at + slot(l), at + slot(l) + n) };
      at += 2 * slot(l);
      return new LayerCache(capacity, width(l), this.type, window(l), storage);
    });
  }

  /** Check that T more positions fit; the context limit gets a clear error. */
  reserve(T: number): void {
    if (this.length + T > this.capacity) {
      throw new ToyError(`context length exceeded: ${this.length} + ${T} tokens > context of ${this.capacity}`);
    }
  }

  /**
   * Forget positions from `length` on (e.g. to reuse a shared prefix). Returns the length kept:
   * `length`, or 0 when a sliding-window layer no longer holds the keys that continuing from
   * `length` needs (it dropped them); the caller then reads the sequence again from the start.
   */
  truncate(length: number): number {
    const n = Math.min(this.length, length);
    this.length = this.layers.every((l) => l.canResumeAt(n)) ? n : 0;
    return this.length;
  }

  /**
   * Hold the first `n` positions of `from` (another cache of the same model, shape and type)
   * instead of computing them again: a copy of their keys and values, which are bit for bit what
   * this cache would get by reading the same tokens (every row is computed the same way whatever
   * the chunks and the batch: docs/serve.md, "Answers independent of load"). What this cache held
   * is forgotten. Returns false, changing nothing, when `from` holds fewer than n positions or a
   * sliding-window layer of `from` dropped keys that continuing from n needs.
   */
  copyPrefix(from: KVCache, n: number): boolean {
    if (from.layers.length !== this.layers.length) throw new ToyError(`KV cache: copying from a cache of ${from.layers.length} layers into one of ${this.layers.length}`);
    if (from === this || n > from.length || n > this.capacity) return false;
    if (!this.layers.every((l, i) => l.canCopyPrefix(from.layers[i], n))) return false;
    this.layers.forEach((l, i) => l.copyPrefix(from.layers[i], n));
    this.length = n;
    return true;
  }

  /** Bytes held by keys and values. */
  get bytes(): number {
    return this.layers.reduce((s, l) => s + l.keys.bytes.byteLength + l.values.bytes.byteLength, 0);
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

/** A batch of sequences laid out one after another: each one's segment, the batch's token ids
 *  and positions, and each sequence's last row (the rows a decode step wants logits of). Every
 *  cache is reserved for its new rows. */
export function layoutBatch(sequences: readonly { ids: Int32Array; cache: KVCache }[]): {
  segments: Segment[]; ids: Int32Array; positions: Int32Array; lastRows: number[];
} {
  const segments: Segment[] = [];
  let start = 0;
  for (const { ids, cache } of sequences) {
    if (ids.length === 0) throw new RangeError("forward: a sequence with no tokens");
    if (segments.some((s) => s.cache === cache)) throw new RangeError("forward: two sequences share one cache");
    cache.reserve(ids.length);
    segments.push({ cache, start, length: ids.length, pos0: cache.length });
    start += ids.length;
  }
  const ids = new Int32Array(start), positions = new Int32Array(start);
  for (const [i, s] of segments.entries()) {
    ids.set(sequences[i].ids, s.start);
    for (let t = 0; t < s.length; t++) positions[s.start + t] = s.pos0 + t;
  }
  return { segments, ids, positions, lastRows: segments.map((s) => s.start + s.length - 1) };
}
