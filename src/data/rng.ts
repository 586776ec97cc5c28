// A small seeded random generator (xoshiro128**), so sampling is reproducible for a seed.

export class Rng {
  private s = new Uint32Array(4);

  constructor(seed: number) {
    // splitmix32 spreads the seed over the state.
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
  }

  /** A uniform 32-bit integer. */
  nextU32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** A uniform float in [0, 1) with 32 random bits. */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** A standard normal value (Box–Muller). */
  normal(): number {
    const u = 1 - this.next(), v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** The generator's state, to save and restore (resuming a run exactly). */
  get state(): number[] {
    return Array.from(this.s);
  }
  set state(s: number[]) {
    this.s.set(s);
  }
}

const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;
