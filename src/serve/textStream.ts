// Generated tokens to text pieces as a client should see them: complete UTF-8 only, stop
// sequences cut off (the text that might begin one is held back until it is clear), and each
// token's log-probability carried along with the text it belongs to.

import type { Tokenizer } from "../io/tokenizer/index.js";

export interface TokenLogprob {
  id: number;
  logprob: number;
  /** The most likely tokens at this position, most likely first. */
  top: { id: number; logprob: number }[];
}

export interface TextPiece {
  text: string;
  logprobs: TokenLogprob[];
}

export class TextStream {
  private decoder;
  private text = "";
  private sent = 0;
  private pending: TokenLogprob[] = [];
  /** Set when a stop sequence appeared: the text ends before it. */
  stopped = false;

  /** `special`: control tokens read as their text (tool-call markers such as [TOOL_CALLS]). */
  constructor(tokenizer: Tokenizer, private stops: readonly string[], special = false) {
    this.decoder = tokenizer.streamDecoder({ special });
  }

  /** Add one token; returns what may be sent now (possibly nothing). */
  push(id: number, logprob?: TokenLogprob): TextPiece {
    if (logprob) this.pending.push(logprob);
    this.text += this.decoder.push(id);
    return this.release(false);
  }

  /** Generation has ended: everything left (before any stop sequence). */
  end(): TextPiece {
    if (!this.stopped) this.text += this.decoder.flush();
    return this.release(true);
  }

  private release(final: boolean): TextPiece {
    if (this.stopped) return this.take(this.sent, true);
    // A stop sequence can only begin where one could not have been found before.
    const from = Math.max(0, this.sent - this.maxStopLength() + 1);
    let cut = -1;
    for (const s of this.stops) {
      const at = this.text.indexOf(s, from);
      if (at !== -1 && (cut === -1 || at < cut)) cut = at;
    }
    if (cut !== -1) {
      this.stopped = true;
      this.text = this.text.slice(0, cut);
      return this.take(Math.max(cut, this.sent), true);
    }
    return this.take(final ? this.text.length : this.text.length - this.heldBack(), final);
  }

  private take(upTo: number, final: boolean): TextPiece {
    const text = this.text.slice(this.sent, upTo);
    this.sent = Math.max(this.sent, upTo);
    // Log-probabilities go out with the first text sent after their token (or at the end).
    if (text === "" && !final) return { text, logprobs: [] };
    const logprobs = this.pending;
    this.pending = [];
    return { text, logprobs };
  }

  /** Length of the longest end of the text that begins some stop sequence. */
  private heldBack(): number {
    let held = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, this.text.length - this.sent); n > held; n--) {
        if (this.text.endsWith(s.slice(0, n))) { held = n; break; }
      }
    }
    return held;
  }

  private maxStopLength(): number {
    return this.stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** All text released so far. */
  get released(): string {
    return this.text.slice(0, this.sent);
  }
}
