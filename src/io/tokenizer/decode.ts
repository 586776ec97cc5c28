// Ids back to text (llama.cpp's token_to_piece and detokenize): each token stands for some bytes;
// the bytes of a sequence are joined and read as UTF-8.

import { byteDecode, concatBytes, utf8Bytes, Utf8Stream } from "./bytes.js";
import { TokenType, type Vocab } from "./vocab.js";

const EMPTY = new Uint8Array(0);

/** The bytes one token stands for. Control and unknown tokens are empty unless `special`. */
export function tokenBytes(vocab: Vocab, id: number, special: boolean): Uint8Array {
  if (!Number.isInteger(id) || id < 0 || id >= vocab.tokens.length) return EMPTY;
  const text = vocab.tokens[id];
  switch (vocab.types[id]) {
    case TokenType.Control:
    case TokenType.Unknown:
      return special ? utf8Bytes(text) : EMPTY;
    case TokenType.UserDefined:
      return utf8Bytes(text);
    case TokenType.Normal:
      return vocab.kind === "spm" ? utf8Bytes(text.replaceAll("\u2581", " ")) : byteDecode(text);
    case TokenType.Byte: {
      const b = parseInt(text.slice(3, 5), 16); // "<0xXX>"
      return Number.isNaN(b) ? EMPTY : Uint8Array.of(b);
    }
    default:
      return EMPTY; // unused and undefined pieces render as nothing
  }
}

/** tokenBytes, remembered per id (llama.cpp keeps the same token-to-piece cache). */
export class PieceBytes {
  private cache: (Uint8Array | undefined)[][] = [[], []];
  constructor(readonly vocab: Vocab) {}

  get(id: number, special: boolean): Uint8Array {
    const c = this.cache[special ? 1 : 0];
    return (c[id] ??= tokenBytes(this.vocab, id, special));
  }
}

export interface DecodeOptions {
  /** Render control tokens (<s>, <|im_end|>, ...) as their text. Default false. */
  special?: boolean;
}

export function decodeIds(pieces: PieceBytes, ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
  const vocab = pieces.vocab;
  const special = opts.special ?? false;
  const parts: Uint8Array[] = [];
  // SentencePiece text was encoded with a space in front: drop it from the first piece that
  // has text (after a leading BOS), as Hugging Face's decode does.
  let stripSpace = vocab.addSpacePrefix;
  for (let i = 0; i < ids.length; i++) {
    let bytes = pieces.get(ids[i], special);
    if (stripSpace && bytes.length > 0) {
      if (bytes[0] === 0x20) bytes = bytes.subarray(1);
      stripSpace = false;
    }
    parts.push(bytes);
  }
  const text = new TextDecoder().decode(concatBytes(parts));
  return vocab.pre.cleanSpaces ? cleanSpaces(text) : text;
}

/** Hugging Face's clean_up_tokenization_spaces, pass for pass as llama.cpp applies it. */
export function cleanSpaces(text: string): string {
  // " ?", " !", " .", " ," -> no space
  let t: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const x = text[i];
    if (i > 0 && text[i - 1] === " " && (x === "?" || x === "!" || x === "." || x === ",")) t.pop();
    t.push(x);
  }
  // " ' " -> "'"
  const t2: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const x = t[i];
    if (i > 0 && x === "'" && i + 1 < t.length && t[i - 1] === " " && t[i + 1] === " ") {
      t2.pop();
      t[i + 1] = "\0";
      t2.push(x);
      i++;
      continue;
    }
    t2.push(x);
  }
  // " 's", " 'm", " 're", " 've" -> no space
  t = [];
  for (let i = 0; i < t2.length; i++) {
    const x = t2[i];
    if (i > 0 && t2[i - 1] === " " && x === "'" && i + 1 < t2.length) {
      const x1 = t2[i + 1], x2 = i + 2 < t2.length ? t2[i + 2] : "";
      if (x1 === "s" || x1 === "m" || (x2 && ((x1 === "r" && x2 === "e") || (x1 === "v" && x2 === "e")))) t.pop();
    }
    t.push(x);
  }
  return t.join("");
}

/** Incremental decoding for generation: `push` returns the text that is complete so far. Pieces
 *  are joined verbatim (no space is stripped, no spaces cleaned), as llama.cpp streams them. */
export class StreamDecoder {
  private utf8 = new Utf8Stream();
  constructor(private pieces: PieceBytes, private special = false) {}

  push(id: number): string {
    return this.utf8.push(this.pieces.get(id, this.special));
  }

  flush(): string {
    return this.utf8.flush();
  }
}
