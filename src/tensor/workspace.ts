// Activation buffers reused from one forward pass to the next.
//
// A decode step of a small model is a few hundred tiny ops; giving each a fresh Float32Array
// costs ~1 MB of allocation and garbage collection per token, a large share of the step's
// time outside the kernels (docs/performance.md). Inside `workspace.run(fn)` every
// `Tensor.zeros` (so every primitive's output) takes an array the previous run handed out and
// that died with it, zero-filled again, instead of a new one. Model code does not change.
//
// The run's result (the logits, and any array sharing its buffer) is never handed out again:
// the caller owns it. Buffers are matched by length, so runs of other shapes (a batch of
// another size) still work; only the arrays of the latest run are kept, so what stays resident
// is one forward's worth of activations.

let active: Workspace | null = null;

export class Workspace {
  /** Arrays of the previous run, by length, free to hand out again. */
  #free = new Map<number, Float32Array[]>();
  /** Arrays handed out in the current run. */
  #used: Float32Array[] = [];

  /** Run `fn` with this workspace serving `Tensor.zeros`; `result` picks the arrays the caller keeps. */
  run<R>(fn: () => R, result: (r: R) => Float32Array): R {
    if (active) return fn(); // nested: the outer run owns the arrays
    active = this;
    let out: R;
    try {
      out = fn();
    } catch (e) {
      this.#used = [];
      throw e;
    } finally {
      active = null;
    }
    const kept = result(out).buffer;
    this.#free.clear();
    for (const a of this.#used) {
      if (a.buffer === kept) continue;
      const list = this.#free.get(a.length);
      if (list) list.push(a);
      else this.#free.set(a.length, [a]);
    }
    this.#used = [];
    return out;
  }

  /** Let go of the arrays kept for the next run (before a forward that does not use them). */
  release(): void {
    this.#free.clear();
  }

  /** A zero-filled array of n values: a free one of that length, or a new one. */
  take(n: number): Float32Array {
    const reused = this.#free.get(n)?.pop();
    const a = reused ? reused.fill(0) : new Float32Array(n);
    this.#used.push(a);
    return a;
  }
}

/** n zeros: from the running workspace if there is one, else a new array. */
export function zeros(n: number): Float32Array {
  return active ? active.take(n) : new Float32Array(n);
}
