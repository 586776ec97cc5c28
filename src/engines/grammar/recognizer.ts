// A recognizer for a grammar, fed one byte at a time: which text may still come next?
//
// The grammar is compiled into a flat list of elements. Each rule is a list of alternatives,
// each alternative a run of elements — one character class, or a reference to a rule — closed
// by an END element. A position is an index into that list.
//
// A parse in progress is a stack of positions (a pushdown automaton, as llama.cpp's grammar
// sampler): the top is the character class that must match next, the ones below are where to
// resume once the rules above are finished. Ambiguity is handled by keeping a set of stacks, all
// advanced together (Earley-like breadth, without left recursion). The empty stack means
// "the grammar is complete here".
//
// Everything is interned and memoized, so the same situation is never worked out twice:
//   - a stack is an id (a node: position + the id of the stack below it), shared by all parses;
//   - a set of stacks is an id (a CharState);
//   - a ByteState is a CharState plus an unfinished UTF-8 character, and its transitions on each
//     of the 256 byte values are remembered in a table.
// So once warm, advancing by a byte is one table lookup.

import { UsageError } from "../../errors.js";
import type { CharRange, Expr, Grammar } from "./gbnf.js";

type Elem =
  | { kind: "char"; ranges: CharRange[]; negated: boolean }
  | { kind: "ref"; rule: number }
  | { kind: "end" };

/** The compiled grammar: flat elements, and where each rule's alternatives start. */
export class Program {
  readonly elems: Elem[] = [];
  /** For each rule, the position of the first element of each alternative. */
  readonly alternatives: number[][] = [];
  readonly ruleNames: string[] = [];
  readonly root: number;

  constructor(grammar: Grammar) {
    const ids = new Map<string, number>();
    for (const name of grammar.rules.keys()) { ids.set(name, this.ruleNames.length); this.ruleNames.push(name); }
    // Alternatives as element lists first; nested groups and repetitions become helper rules.
    const bodies: Elem[][][] = [];
    const helper = (name: string, alts: Elem[][]): number => {
      const id = this.ruleNames.length;
      this.ruleNames.push(name);
      bodies[id] = alts;
      return id;
    };
    const altsOf = (e: Expr, name: string): Elem[][] => (e.type === "alt" ? e.options.map((o) => seqOf(o, name)) : [seqOf(e, name)]);
    const seqOf = (e: Expr, name: string): Elem[] => {
      switch (e.type) {
        case "chars": return [{ kind: "char", ranges: normalize(e.ranges), negated: e.negated }];
        case "ref": return [{ kind: "ref", rule: ids.get(e.name)! }];
        case "seq": return e.items.flatMap((x) => seqOf(x, name));
        case "alt": return [{ kind: "ref", rule: helper(`${name}_${this.ruleNames.length}`, altsOf(e, name)) }];
        case "repeat": {
          // x{min,max}: x min times, then (max - min) nested optionals, or a right-recursive star.
          const x = seqOf(e.expr, name);
          const out: Elem[] = [];
          for (let i = 0; i < e.min; i++) out.push(...x);
          if (e.max === Infinity) {
            const star = helper(`${name}_${this.ruleNames.length}`, []);
            bodies[star] = [[...x, { kind: "ref", rule: star }], []];
            out.push({ kind: "ref", rule: star });
          } else if (e.max > e.min) {
            let opt = helper(`${name}_${this.ruleNames.length}`, [x, []]);
            for (let i = e.min + 1; i < e.max; i++) opt = helper(`${name}_${this.ruleNames.length}`, [[...x, { kind: "ref", rule: opt }], []]);
            out.push({ kind: "ref", rule: opt });
          }
          return out;
        }
      }
    };
    for (const [name, e] of grammar.rules) bodies[ids.get(name)!] = altsOf(e, name);
    for (let r = 0; r < bodies.length; r++) {
      this.alternatives[r] = bodies[r].map((alt) => {
        const at = this.elems.length;
        this.elems.push(...alt, { kind: "end" });
        return at;
      });
    }
    this.root = ids.get(grammar.root)!;
    this.checkNoLeftRecursion();
  }

  /** A rule that can reach itself without consuming a character would loop forever. */
  private checkNoLeftRecursion(): void {
    const n = this.alternatives.length;
    const nullable = new Array<boolean>(n).fill(false);
    for (let changed = true; changed;) {
      changed = false;
      for (let r = 0; r < n; r++) {
        if (nullable[r]) continue;
        if (this.alternatives[r].some((a) => this.nullableFrom(a, nullable))) { nullable[r] = changed = true; }
      }
    }
    // Rules each rule may start with (through nullable prefixes).
    const leftEdge = (r: number): number[] => {
      const out: number[] = [];
      for (const a of this.alternatives[r]) {
        for (let p = a; ; p++) {
          const e = this.elems[p];
          if (e.kind !== "ref") break;
          out.push(e.rule);
          if (!nullable[e.rule]) break;
        }
      }
      return out;
    };
    const state = new Array<number>(n).fill(0); // 0 unseen, 1 on the path, 2 done
    const visit = (r: number, path: string[]): void => {
      if (state[r] === 2) return;
      if (state[r] === 1) {
        const cycle = [...path.slice(path.indexOf(this.ruleNames[r])), this.ruleNames[r]];
        throw new UsageError(`grammar: rule "${this.ruleNames[r]}" is left-recursive (${cycle.join(" → ")}); rewrite it with repetition`);
      }
      state[r] = 1;
      for (const s of leftEdge(r)) visit(s, [...path, this.ruleNames[r]]);
      state[r] = 2;
    };
    for (let r = 0; r < n; r++) visit(r, []);
  }

  private nullableFrom(pos: number, nullable: boolean[]): boolean {
    for (let p = pos; ; p++) {
      const e = this.elems[p];
      if (e.kind === "end") return true;
      if (e.kind === "char" || !nullable[e.rule]) return false;
    }
  }
}

function normalize(ranges: CharRange[]): CharRange[] {
  const sorted = ranges.map(([a, b]) => [a, b] as CharRange).sort((x, y) => x[0] - y[0]);
  const out: CharRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push(r);
  }
  return out;
}

/** Does the class accept some code point in [lo, hi]? */
function classMeets(e: { ranges: CharRange[]; negated: boolean }, lo: number, hi: number): boolean {
  if (!e.negated) return e.ranges.some(([a, b]) => a <= hi && b >= lo);
  // Negated: some point of [lo, hi] lies outside every range.
  let next = lo;
  for (const [a, b] of e.ranges) {
    if (b < next) continue;
    if (a > next) return true;
    next = b + 1;
    if (next > hi) return false;
  }
  return next <= hi;
}

const classHas = (e: { ranges: CharRange[]; negated: boolean }, cp: number) => classMeets(e, cp, cp);

export const DEAD = -1;
/** A transition not worked out yet (see `transitions`). */
export const UNKNOWN = -2;
/** The stack with nothing left to match. */
const EMPTY_STACK = 0;

interface ByteState {
  charState: number;
  /** An unfinished UTF-8 character: its bits so far, how many continuation bytes are missing,
   *  and its length in bytes (which sets the smallest code point it may encode). */
  partial: number;
  missing: number;
  length: number;
  next: Int32Array;
}

/** The grammar's states, discovered as text is fed to them, shared by every generation that uses the grammar. */
export class Recognizer {
  private stackPos: number[] = [-1];
  private stackBelow: number[] = [-1];
  private stackIds = new Map<string, number>();
  private expanded = new Map<number, number[]>();
  private charStates: number[][] = [];
  private charStateIds = new Map<string, number>();
  private byteStates: ByteState[] = [];
  private byteStateIds = new Map<string, number>();
  /** The state before any text. */
  readonly start: number;

  constructor(readonly program: Program) {
    const p = program;
    const startStacks = p.alternatives[p.root].flatMap((a) => this.expand(p.elems[a].kind === "end" ? EMPTY_STACK : this.push(a, EMPTY_STACK)));
    this.start = this.byteState(this.charState(startStacks), 0, 0, 0);
  }

  /** The state after one more byte, or DEAD when the text can no longer match. */
  step(state: number, byte: number): number {
    const s = this.byteStates[state];
    let to = s.next[byte];
    if (to === UNKNOWN) to = s.next[byte] = this.computeStep(s, byte);
    return to;
  }

  /** The state's transition table: the next state per byte, DEAD, or UNKNOWN (ask `step`). */
  transitions(state: number): Int32Array {
    return this.byteStates[state].next;
  }

  /** The grammar may end here (the text so far is a whole sentence of it). */
  accepts(state: number): boolean {
    const s = this.byteStates[state];
    return s.missing === 0 && this.charStates[s.charState].includes(EMPTY_STACK);
  }

  /** The grammar must end here: nothing may follow. */
  complete(state: number): boolean {
    const s = this.byteStates[state];
    const stacks = this.charStates[s.charState];
    return s.missing === 0 && stacks.length === 1 && stacks[0] === EMPTY_STACK;
  }

  get stateCount(): number { return this.byteStates.length; }

  private computeStep(s: ByteState, b: number): number {
    if (s.missing > 0) {
      if ((b & 0xc0) !== 0x80) return DEAD;
      const partial = (s.partial << 6) | (b & 0x3f), missing = s.missing - 1;
      if (!this.viable(s.charState, partial, missing, s.length)) return DEAD;
      return missing === 0 ? this.afterChar(s.charState, partial) : this.byteState(s.charState, partial, missing, s.length);
    }
    if (b < 0x80) return this.afterChar(s.charState, b);
    // A lead byte: how many continuation bytes follow, and the bits it carries.
    const [missing, bits] = b >= 0xf0 && b <= 0xf4 ? [3, b & 0x07] : b >= 0xe0 ? (b <= 0xef ? [2, b & 0x0f] : [0, 0]) : b >= 0xc2 && b <= 0xdf ? [1, b & 0x1f] : [0, 0];
    if (missing === 0) return DEAD;
    return this.viable(s.charState, bits, missing, missing + 1) ? this.byteState(s.charState, bits, missing, missing + 1) : DEAD;
  }

  /**
   * Could some stack accept a character that starts with these bits? Only well-formed UTF-8
   * counts: no overlong forms, no surrogates, nothing beyond U+10FFFF (TextDecoder would turn
   * those into U+FFFD, which the grammar did not allow).
   */
  private viable(charState: number, bits: number, missing: number, length: number): boolean {
    const smallest = [0, 0, 0x80, 0x800, 0x10000][length];
    const lo = Math.max(bits * 2 ** (6 * missing), smallest), hi = Math.min(bits * 2 ** (6 * missing) + 2 ** (6 * missing) - 1, 0x10ffff);
    if (lo > hi || (lo >= 0xd800 && hi <= 0xdfff)) return false;
    return this.charStates[charState].some((st) => st !== EMPTY_STACK && classMeets(this.top(st), lo, hi));
  }

  private afterChar(charState: number, cp: number): number {
    const out: number[] = [];
    for (const st of this.charStates[charState]) {
      if (st === EMPTY_STACK || !classHas(this.top(st), cp)) continue;
      out.push(...this.expand(this.after(this.stackPos[st], this.stackBelow[st])));
    }
    return out.length === 0 ? DEAD : this.byteState(this.charState(out), 0, 0, 0);
  }

  private top(stack: number): { ranges: CharRange[]; negated: boolean } {
    return this.program.elems[this.stackPos[stack]] as { kind: "char"; ranges: CharRange[]; negated: boolean };
  }

  /** The stack that continues after the element at `pos`: the rest of its alternative, or what is below. */
  private after(pos: number, below: number): number {
    return this.program.elems[pos + 1].kind === "end" ? below : this.push(pos + 1, below);
  }

  private push(pos: number, below: number): number {
    const key = `${pos},${below}`;
    let id = this.stackIds.get(key);
    if (id === undefined) {
      id = this.stackPos.length;
      this.stackPos.push(pos);
      this.stackBelow.push(below);
      this.stackIds.set(key, id);
    }
    return id;
  }

  /** The stacks a stack stands for once every rule reference on top is opened: tops are characters (or empty). */
  private expand(stack: number): number[] {
    if (stack === EMPTY_STACK) return [EMPTY_STACK];
    const memo = this.expanded.get(stack);
    if (memo) return memo;
    const pos = this.stackPos[stack], e = this.program.elems[pos];
    let out: number[];
    if (e.kind === "char") out = [stack];
    else if (e.kind === "ref") {
      const rest = this.after(pos, this.stackBelow[stack]);
      out = [];
      for (const a of this.program.alternatives[e.rule]) {
        out.push(...this.expand(this.program.elems[a].kind === "end" ? rest : this.push(a, rest)));
      }
    } else throw new Error("recognizer: a stack points at the end of an alternative");
    this.expanded.set(stack, out);
    return out;
  }

  private charState(stacks: number[]): number {
    const unique = [...new Set(stacks)].sort((a, b) => a - b);
    const key = unique.join(",");
    let id = this.charStateIds.get(key);
    if (id === undefined) {
      id = this.charStates.length;
      this.charStates.push(unique);
      this.charStateIds.set(key, id);
    }
    return id;
  }

  private byteState(charState: number, partial: number, missing: number, length: number): number {
    const key = `${charState}:${partial}:${missing}:${length}`;
    let id = this.byteStateIds.get(key);
    if (id === undefined) {
      id = this.byteStates.length;
      this.byteStates.push({ charState, partial, missing, length, next: new Int32Array(256).fill(UNKNOWN) });
      this.byteStateIds.set(key, id);
    }
    return id;
  }
}

/** Feed a whole text (or bytes): the final state, or DEAD. */
export function feed(r: Recognizer, state: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length && state !== DEAD; i++) state = r.step(state, bytes[i]);
  return state;
}
