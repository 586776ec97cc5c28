// From a character grammar to the tokens a model may choose next.
//
// A token stands for some bytes (several characters, part of one, or a character and a half);
// it may come next when feeding all of its bytes to the recognizer keeps the text matchable.
// Checking 50 000 tokens one by one each step would cost more than the model, so:
//   - the vocabulary is a trie of token bytes: tokens that share a start are checked together,
//     and a whole subtree is skipped as soon as its first bytes are refused;
//   - the mask of a recognizer state is remembered: states repeat (every character inside a JSON
//     string leaves the same state), so most steps cost one lookup and one pass over the logits.
// Both live in a TokenGrammar, shared by every generation with the same grammar and vocabulary.

import type { Tokenizer } from "../../io/tokenizer/index.js";
import type { TokenFilter } from "../generate.js";
import { parseGbnf } from "./gbnf.js";
import { DEAD, feed, Program, Recognizer, UNKNOWN } from "./recognizer.js";

/** The vocabulary's token bytes as a trie, in flat arrays (children of node n: childStart[n] .. childStart[n+1]). */
export class VocabTrie {
  readonly childStart: Int32Array;
  readonly childByte: Uint8Array;
  readonly childNode: Int32Array;
  /** The token whose bytes end at each node (-1: none); `moreTokensAt` has the rare second ones. */
  readonly tokenAt: Int32Array;
  readonly moreTokensAt: Map<number, number[]>;
  readonly nVocab: number;

  constructor(tokenBytes: (id: number) => Uint8Array, nVocab: number) {
    this.nVocab = nVocab;
    // Build with maps, then flatten breadth-first.
    type Node = { children: Map<number, Node>; tokens: number[] };
    const root: Node = { children: new Map(), tokens: [] };
    for (let id = 0; id < nVocab; id++) {
      const bytes = tokenBytes(id);
      if (bytes.length === 0) continue; // control tokens add no text: never allowed by a grammar
      let n = root;
      for (const b of bytes) {
        let c = n.children.get(b);
        if (!c) n.children.set(b, (c = { children: new Map(), tokens: [] }));
        n = c;
      }
      n.tokens.push(id);
    }
    const order: Node[] = [root];
    for (let i = 0; i < order.length; i++) for (const c of order[i].children.values()) order.push(c);
    const index = new Map(order.map((n, i) => [n, i]));
    this.childStart = new Int32Array(order.length + 1);
    this.childByte = new Uint8Array(order.length - 1);
    this.childNode = new Int32Array(order.length - 1);
    this.tokenAt = new Int32Array(order.length).fill(-1);
    this.moreTokensAt = new Map();
    let k = 0;
    order.forEach((n, i) => {
      this.childStart[i] = k;
      for (const [b, c] of n.children) { this.childByte[k] = b; this.childNode[k] = index.get(c)!; k++; }
      if (n.tokens.length > 0) this.tokenAt[i] = n.tokens[0];
      if (n.tokens.length > 1) this.moreTokensAt.set(i, n.tokens.slice(1));
    });
    this.childStart[order.length] = k;
  }

  get nodeCount(): number { return this.childStart.length - 1; }
}

const tries = new WeakMap<Tokenizer, VocabTrie>();

/** The trie of a tokenizer's vocabulary, built once. */
export function vocabTrie(tokenizer: Tokenizer): VocabTrie {
  let t = tries.get(tokenizer);
  if (!t) tries.set(tokenizer, (t = new VocabTrie((id) => tokenizer.bytes(id), tokenizer.vocabSize)));
  return t;
}

/** Masks of allowed tokens (as bit sets) per recognizer state, for one grammar over one vocabulary. */
export class TokenGrammar {
  readonly recognizer: Recognizer;
  private masks = new Map<number, TokenMask>();
  /** Counters, for measuring: masks computed vs found in the cache. */
  computed = 0;
  reused = 0;

  constructor(readonly gbnf: string, readonly trie: VocabTrie, private tokenBytes: (id: number) => Uint8Array) {
    this.recognizer = new Recognizer(new Program(parseGbnf(gbnf)));
  }

  /** The tokens whose bytes can follow in `state`. */
  mask(state: number): TokenMask {
    let m = this.masks.get(state);
    if (m) { this.reused++; return m; }
    this.computed++;
    if (this.masks.size >= 8192) this.masks.clear(); // bounded memory for grammars with endless states
    const bits = this.walk(state);
    let count = 0;
    for (let w = 0; w < bits.length; w++) count += popcount(bits[w]);
    // A short list when few are allowed (most states outside strings), else the bit set.
    m = { bits, allowed: count <= 1024 ? idsOf(bits, this.trie.nVocab) : undefined };
    this.masks.set(state, m);
    return m;
  }

  /** The state after a token's bytes (DEAD when they do not fit). */
  after(state: number, id: number): number {
    return feed(this.recognizer, state, this.tokenBytes(id));
  }

  /** Depth-first over the trie, carrying the recognizer state; a refused byte prunes its subtree. */
  private walk(state: number): Int32Array {
    const t = this.trie, r = this.recognizer;
    const { childStart, childByte, childNode, tokenAt } = t;
    const bits = new Int32Array((t.nVocab + 31) >>> 5);
    // The pending (node, state) pairs; a trie path is at most as deep as the longest token.
    let nodes = new Int32Array(1024), states = new Int32Array(1024), top = 0;
    nodes[0] = 0; states[0] = state; top = 1;
    while (top > 0) {
      top--;
      const node = nodes[top], st = states[top];
      const table = r.transitions(st);
      for (let k = childStart[node], end = childStart[node + 1]; k < end; k++) {
        const b = childByte[k];
        let next = table[b];
        if (next === UNKNOWN) next = r.step(st, b);
        if (next === DEAD) continue;
        const child = childNode[k];
        const id = tokenAt[child];
        if (id >= 0) {
          bits[id >>> 5] |= 1 << (id & 31);
          const more = t.moreTokensAt.get(child);
          if (more) for (const m of more) bits[m >>> 5] |= 1 << (m & 31);
        }
        if (childStart[child + 1] > childStart[child]) {
          if (top === nodes.length) {
            const n2 = new Int32Array(top * 2); n2.set(nodes); nodes = n2;
            const s2 = new Int32Array(top * 2); s2.set(states); states = s2;
          }
          nodes[top] = child; states[top] = next; top++;
        }
      }
    }
    return bits;
  }
}

/** Bit i of `bits` set: token i may come next; `allowed` lists them when there are few. */
export interface TokenMask {
  bits: Int32Array;
  allowed?: number[];
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

function idsOf(bits: Int32Array, n: number): number[] {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) if (bits[i >>> 5] & (1 << (i & 31))) ids.push(i);
  return ids;
}

const compiled = new WeakMap<Tokenizer, Map<string, TokenGrammar>>();

/** A grammar compiled for a tokenizer, remembered (the 32 most recent per tokenizer) with its masks. */
export function tokenGrammar(gbnf: string, tokenizer: Tokenizer): TokenGrammar {
  let byText = compiled.get(tokenizer);
  if (!byText) compiled.set(tokenizer, (byText = new Map()));
  let g = byText.get(gbnf);
  // A grammar whose states keep growing (deeply nested JSON) starts afresh: memory stays bounded;
  // generations still using the old one keep it until they end.
  if (g && g.recognizer.stateCount > 100_000) { byText.delete(gbnf); g = undefined; }
  if (g) {
    byText.delete(gbnf); // most recent last
  } else {
    g = new TokenGrammar(gbnf, vocabTrie(tokenizer), (id) => tokenizer.bytes(id));
    if (byText.size >= 32) byText.delete(byText.keys().next().value!);
  }
  byText.set(gbnf, g);
  return g;
}

/**
 * One generation's constraint: where it is in the grammar, which tokens may come next.
 * Stop tokens (end of sequence / turn) are allowed only where the grammar may end.
 */
export class GrammarConstraint implements TokenFilter {
  private state: number;

  constructor(readonly grammar: TokenGrammar, private stopIds: ReadonlySet<number>) {
    this.state = grammar.recognizer.start;
  }

  maskLogits(logits: Float32Array): void {
    // Stop tokens add no text (they are not in the trie); they end the answer, so they keep
    // their logit only where the grammar may end.
    const mayEnd = this.grammar.recognizer.accepts(this.state);
    const stops = [...this.stopIds].filter((id) => id < logits.length).map((id) => [id, mayEnd ? logits[id] : -Infinity]);
    const mask = this.grammar.mask(this.state);
    if (mask.allowed) {
      // Few tokens allowed: keep their logits, set everything else at once.
      const keep = mask.allowed.map((id) => logits[id]);
      logits.fill(-Infinity);
      mask.allowed.forEach((id, k) => { logits[id] = keep[k]; });
    } else {
      const bits = mask.bits, n = logits.length;
      for (let w = 0; w < bits.length; w++) {
        const word = bits[w];
        if (word === -1) continue; // all 32 allowed
        for (let i = w << 5, end = Math.min(i + 32, n), bit = 1; i < end; i++, bit <<= 1) if ((word & bit) === 0) logits[i] = -Infinity;
      }
    }
    for (const [id, v] of stops) logits[id] = v;
  }

  accept(id: number): void {
    if (this.stopIds.has(id)) return;
    const next = this.grammar.after(this.state, id);
    if (next === DEAD) throw new Error(`grammar: token ${id} does not fit the grammar here`);
    this.state = next;
  }

  /** Nothing may follow: the answer is a complete sentence of the grammar. */
  get complete(): boolean {
    return this.grammar.recognizer.complete(this.state);
  }

  /** The answer so far may end here. */
  get acceptable(): boolean {
    return this.grammar.recognizer.accepts(this.state);
  }
}
