// Bytes and text: GPT-2's byte-to-unicode mapping (byte-level BPE spells every byte as a printable
// character, so merges never see raw control bytes or spaces) and incremental UTF-8 decoding.

const utf8 = new TextEncoder();

/** Byte b -> the character GPT-2 uses for it: printable Latin-1 stays, the rest shift to U+0100.. */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const table: string[] = new Array(256);
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  for (let b = 0; b < 256; b++) table[b] = String.fromCharCode(printable(b) ? b : next++);
  return table;
})();

/** The inverse: character code -> byte, or -1 for characters outside the mapping. */
const CHAR_TO_BYTE: Int16Array = (() => {
  const inv = new Int16Array(512).fill(-1);
  BYTE_TO_CHAR.forEach((ch, b) => (inv[ch.charCodeAt(0)] = b));
  return inv;
})();

export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}

/** Text -> its UTF-8 bytes spelled in GPT-2's byte alphabet. */
export function byteEncode(text: string): string {
  const bytes = utf8.encode(text);
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += BYTE_TO_CHAR[bytes[i]];
  return s;
}

/** A byte-level token's text -> the bytes it stands for. Characters outside the alphabet (which a
 *  well-formed vocabulary never has) keep their own UTF-8 bytes. */
export function byteDecode(piece: string): Uint8Array {
  const out: number[] = [];
  for (const ch of piece) {
    const code = ch.codePointAt(0)!;
    const b = code < 512 ? CHAR_TO_BYTE[code] : -1;
    if (b >= 0) out.push(b);
    else out.push(...utf8.encode(ch));
  }
  return Uint8Array.from(out);
}

/** Joins byte chunks into text, holding back an incomplete UTF-8 sequence at the end until the
 *  bytes that complete it arrive (a multi-byte character may be split across tokens). */
export class Utf8Stream {
  private decoder = new TextDecoder("utf-8", { fatal: false });

  push(bytes: Uint8Array): string {
    return bytes.length ? this.decoder.decode(bytes, { stream: true }) : "";
  }

  /** Whatever is held back, with U+FFFD for a sequence that never completed. */
  flush(): string {
    return this.decoder.decode();
  }
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
