// A batch of token sequences for next-token training.

/** B sequences of T tokens: input[b·T + t] predicts target[b·T + t] (IGNORE = -100: not scored). */
export interface Batch {
  input: Int32Array;
  target: Int32Array;
  batch: number;
  seq: number;
}
