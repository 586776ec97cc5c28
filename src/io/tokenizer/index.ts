// Tokenizers built from a GGUF file's vocabulary: SentencePiece ("llama") and byte-level BPE
// ("gpt2"), reproducing llama.cpp's token ids exactly.
//
//   encode: raw text -> special-token matching -> (SPM: ▁-escaped text | BPE: pre-tokens) -> merges
//   decode: ids -> the bytes each token stands for -> UTF-8 text

import type { GGUFValue } from "../gguf/reader.js";
import { BpeModel } from "./bpe.js";
import { decodeIds, PieceBytes, StreamDecoder, type DecodeOptions } from "./decode.js";
import { splitText } from "./pretokenize.js";
import { partition } from "./special.js";
import { SpmModel } from "./spm.js";
import { loadVocab, type Vocab } from "./vocab.js";

export interface EncodeOptions {
  /** Put BOS first. Default: the vocabulary's `add_bos_token` (llama.cpp's default for its kind). */
  addBos?: boolean;
  /** Put EOS last. Default: the vocabulary's `add_eos_token`. */
  addEos?: boolean;
  /** Match control-token text (e.g. "<|im_end|>") as those tokens. Default false: such text is
   *  tokenized as plain text. User-defined tokens are matched either way, as in llama.cpp. */
  parseSpecial?: boolean;
}

export interface Tokenizer {
  readonly kind: "spm" | "bpe";
  readonly vocabSize: number;
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  readonly eot: number | undefined;
  readonly addBos: boolean;
  /** ids that end a turn / generation (eos, eot, and e.g. <|im_end|>, <|eot_id|>, <|endoftext|>) */
  readonly stopIds: ReadonlySet<number>;
  encode(text: string, opts?: EncodeOptions): number[];
  /** Text of a sequence: control tokens are left out unless `special`; SentencePiece's added
   *  leading space is removed. */
  decode(ids: ArrayLike<number>, opts?: DecodeOptions): string;
  /** The raw token text, as the vocabulary spells it (e.g. "▁the", "Ġthe", "<0x0A>"). */
  piece(id: number): string;
  /** The bytes a token adds to generated text, as streamed (empty for control tokens). */
  bytes(id: number): Uint8Array;
  /** Incremental decoding: `push` returns only complete UTF-8 text. */
  streamDecoder(opts?: DecodeOptions): { push(id: number): string; flush(): string };
  /** Exact token lookup (e.g. "<|im_end|>"). */
  tokenId(text: string): number | undefined;
}

export type { DecodeOptions };

/** Builds the tokenizer a GGUF file's `tokenizer.ggml.*` metadata describes. Throws
 *  ModelFileError (naming `path` and the key) for a missing or unsupported vocabulary. */
export function tokenizerFromMetadata(meta: Map<string, GGUFValue>, path: string): Tokenizer {
  return new GGUFTokenizer(loadVocab(meta, path));
}

class GGUFTokenizer implements Tokenizer {
  readonly kind: "spm" | "bpe";
  readonly vocabSize: number;
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  readonly eot: number | undefined;
  readonly addBos: boolean;
  readonly stopIds: ReadonlySet<number>;
  private spm?: SpmModel;
  private bpe?: BpeModel;
  private pieces: PieceBytes;

  constructor(private vocab: Vocab) {
    this.kind = vocab.kind;
    this.vocabSize = vocab.tokens.length;
    this.bos = vocab.bos;
    this.eos = vocab.eos;
    this.eot = vocab.eot;
    this.addBos = vocab.addBos;
    this.stopIds = vocab.stopIds;
    this.pieces = new PieceBytes(vocab);
    if (vocab.kind === "spm") this.spm = new SpmModel(vocab);
    else this.bpe = new BpeModel(vocab);
  }

  encode(text: string, opts: EncodeOptions = {}): number[] {
    const v = this.vocab;
    const out: number[] = [];
    if ((opts.addBos ?? v.addBos) && v.bos !== undefined) out.push(v.bos);
    let afterSpecial = true; // SentencePiece puts a space before text that starts the input or follows a special token
    for (const frag of partition(text, v.specials, opts.parseSpecial ?? false)) {
      if (typeof frag === "number") {
        out.push(frag);
        afterSpecial = true;
      } else if (this.spm) {
        const spaced = v.addSpacePrefix && afterSpecial ? " " + frag : frag;
        this.spm.encode(spaced.replaceAll(" ", "\u2581"), out);
        afterSpecial = false;
      } else {
        for (const word of splitText(frag, v.pre.regexes)) this.bpe!.encodeWord(word, out);
      }
    }
    if ((opts.addEos ?? v.addEos) && v.eos !== undefined) out.push(v.eos);
    return out;
  }

  decode(ids: ArrayLike<number>, opts?: DecodeOptions): string {
    return decodeIds(this.pieces, ids, opts);
  }

  piece(id: number): string {
    const t = this.vocab.tokens[id];
    if (t === undefined) throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.vocabSize - 1})`);
    return t;
  }

  bytes(id: number): Uint8Array {
    return this.pieces.get(id, false);
  }

  streamDecoder(opts?: DecodeOptions): StreamDecoder {
    return new StreamDecoder(this.pieces, opts?.special ?? false);
  }

  tokenId(text: string): number | undefined {
    return this.vocab.ids.get(text);
  }
}
