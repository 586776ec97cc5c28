// Activation buffers reused within a forward pass and from one forward pass to the next.
//
// A decode step of a small model is a few hundred tiny ops; giving each a fresh Float32Array
// costs ~1 MB of allocation and garbage collection per token, a large share of the step's
// time outside the kernels (docs/performance.md). A prompt forward allocates far more (SmolLM2,
// 128 tokens: 394 arrays, 148 MB), fresh pages the kernel must fault in and V8 must collect,
// which also set the process's peak memory. Inside `workspace.run(fn)` every `Tensor.zeros` (so
// every primitive's output) takes a free array of that length, zero-filled again, instead of a
// new one (`Tensor.output`, for an output its kernel writes in full, skips the fill). Model code does not change, except that each block of the forward runs in
// `scoped` (ops.block): once a layer returns, the arrays it took, all but its output, are free
// for the next layer, and so is its input (the forward carries on from the output), so a
// forward holds about one layer's activations, not all of them, nor every layer's output
// (SmolLM2, 512 rows: 30 × 1.2 MB).
//
// The run's result (the logits, and any array sharing its buffer) is never handed out again:
// the caller owns it. Buffers are matched by length, so runs of other shapes (a batch of
// another size) still work; `run` keeps the arrays of the latest run for the next one unless
// `release` lets them go.

let active: Workspace | null = null;

export class Workspace {
  /** Arrays free to hand out, by length: given back in this run, or (stale) left by the previous one. */
  #free = new Map<number, Float32Array[]>();
  #stale = new Map<number, Float32Array[]>();
  /** Arrays handed out in the current run and not yet given back by a scope. */
  #used: Float32Array[] = [];
  /** Where each open scope's arrays start in #used (innermost last). */
  #marks: number[] = [];

  /** Run `fn` with this workspace serving `Tensor.zeros`; `result` picks the arrays the caller keeps. */
  run<R>(fn: () => R, result: (r: R) => Float32Array): R {
    if (active) return fn(); // nested: the outer run owns the arrays
    active = this;
    [this.#stale, this.#free] = [this.#free, this.#stale]; // the stale map is empty between runs
    let out: R;
    try {
      out = fn();
    } catch (e) {
      this.#used = [];
      this.#marks = [];
      throw e;
    } finally {
      active = null;
      this.#stale.clear(); // what this run did not need: only the latest run's arrays stay
    }
    const kept = result(out).buffer;
    for (const a of this.#used) if (a.buffer !== kept) this.#give(a);
    this.#used = [];
    return out;
  }

  /**
   * Inside `run`: fn's arrays, all but those sharing its result's buffer, are free once it returns;
   * so is `input`'s array (taken before the scope) when the caller passes it: an input it will
   * not read again, such as a layer's, which the forward replaces with the layer's output.
   */
  scope<R>(fn: () => R, result: (r: R) => Float32Array, input?: Float32Array): R {
    this.#marks.push(this.#used.length);
    const out = fn();
    const mark = this.#marks.pop()!; // moved down if fn gave back an input taken before it
    const kept = result(out).buffer;
    const taken = this.#used.splice(mark);
    for (const a of taken) if (a.buffer === kept) this.#used.push(a); else this.#give(a);
    if (input && input.buffer !== kept) this.#giveBack(input);
    return out;
  }

  /** Give back the whole array `x` if the run handed it out and no scope gave it back yet. */
  #giveBack(x: Float32Array): void {
    const i = this.#used.indexOf(x);
    if (i < 0) return; // not the workspace's (the caller's input), or a view into a larger array
    this.#used.splice(i, 1);
    // The arrays after it moved down one place: so do the starts of the scopes still open.
    for (let m = 0; m < this.#marks.length; m++) if (this.#marks[m] > i) this.#marks[m]--;
    this.#give(x);
  }

  /** Let go of the free arrays (before or after a forward whose arrays should not stay resident). */
  release(): void {
    this.#free.clear();
  }

  /** An array of n values: a free one of that length, or a new one. Zero-filled unless `filled` is
   *  false (an output its kernel writes in full: the fill was 4–8% of a 512-token prompt forward). */
  take(n: number, filled = true): Float32Array {
    const reused = this.#free.get(n)?.pop() ?? this.#stale.get(n)?.pop();
    const a = reused ? (filled ? reused.fill(0) : reused) : new Float32Array(n);
    this.#used.push(a);
    return a;
  }

  #give(a: Float32Array): void {
    const list = this.#free.get(a.length);
    if (list) list.push(a);
    else this.#free.set(a.length, [a]);
  }
}

/** n zeros: from the running workspace if there is one, else a new array. */
export function zeros(n: number): Float32Array {
  return active ? active.take(n) : new Float32Array(n);
}

/** n values to be overwritten, every one, before anything reads them: from the running workspace
 *  as they were left (not zeroed), else a new array. */
export function scratch(n: number): Float32Array {
  return active ? active.take(n, false) : new Float32Array(n);
}

/** fn in a scope of the running workspace (Workspace.scope, `input` free after it too), or just fn outside a run. */
export function scoped<R>(fn: () => R, result: (r: R) => Float32Array, input?: Float32Array): R {
  return active ? active.scope(fn, result, input) : fn();
}
