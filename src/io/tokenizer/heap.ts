// The work queue of both merge tokenizers: candidate merges of two adjacent symbols, best first.
// A binary min-heap over (priority, left position), kept in typed arrays because a long text puts
// millions of candidates through it.

export class MergeQueue {
  private priority = new Float64Array(1024);
  private leftOf = new Int32Array(1024);
  private rightOf = new Int32Array(1024);
  private sizeOf = new Int32Array(1024);
  size = 0;

  // what the last pop() returned
  left = 0;
  right = 0;
  mergedSize = 0;

  /** Lower priority comes out first; equal priorities leftmost first. */
  push(priority: number, left: number, right: number, mergedSize: number): void {
    if (this.size === this.priority.length) this.grow();
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pp = this.priority[parent];
      if (pp < priority || (pp === priority && this.leftOf[parent] < left)) break;
      this.move(parent, i);
      i = parent;
    }
    this.set(i, priority, left, right, mergedSize);
  }

  /** Takes the best candidate into `left`, `right`, `mergedSize`; false when empty. */
  pop(): boolean {
    if (this.size === 0) return false;
    this.left = this.leftOf[0];
    this.right = this.rightOf[0];
    this.mergedSize = this.sizeOf[0];
    const last = --this.size;
    if (last > 0) {
      const p = this.priority[last], l = this.leftOf[last], r = this.rightOf[last], s = this.sizeOf[last];
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= last) break;
        if (c + 1 < last && this.before(c + 1, c)) c++;
        const cp = this.priority[c];
        if (p < cp || (p === cp && l < this.leftOf[c])) break;
        this.move(c, i);
        i = c;
      }
      this.set(i, p, l, r, s);
    }
    return true;
  }

  private before(a: number, b: number): boolean {
    const pa = this.priority[a], pb = this.priority[b];
    return pa < pb || (pa === pb && this.leftOf[a] < this.leftOf[b]);
  }

  private move(from: number, to: number): void {
    this.priority[to] = this.priority[from];
    this.leftOf[to] = this.leftOf[from];
    this.rightOf[to] = this.rightOf[from];
    this.sizeOf[to] = this.sizeOf[from];
  }

  private set(i: number, p: number, l: number, r: number, s: number): void {
    this.priority[i] = p;
    this.leftOf[i] = l;
    this.rightOf[i] = r;
    this.sizeOf[i] = s;
  }

  private grow(): void {
    const n = this.priority.length * 2;
    const g = <T extends Float64Array | Int32Array>(a: T, b: T): T => (b.set(a), b);
    this.priority = g(this.priority, new Float64Array(n));
    this.leftOf = g(this.leftOf, new Int32Array(n));
    this.rightOf = g(this.rightOf, new Int32Array(n));
    this.sizeOf = g(this.sizeOf, new Int32Array(n));
  }
}
