// Per-token log-probabilities: how likely a model finds each token of a text, and perplexity.
//
// Run it with `npm run example -- logprobs` (`--quick` is accepted; this one is quick anyway).
// The model is $TOY_MODEL, else SmolLM2-135M-Instruct from the shared fixtures, else the model
// the from-scratch example saved.
//
// What happens, in order:
//   1. a sentence is scored: for every token after the first, log p(token | the tokens before);
//   2. one of those numbers is recomputed by hand from the model's logits;
//   3. the log-probabilities add up to the sentence's log-probability, and average to perplexity;
//   4. two sentences that differ in one word are compared.

import { logSumExp, loadModelFromFile, readGGUF, scoreTokens, selectBackend, tokenizerFromMetadata, type Scores } from "toy";
import { exampleModel, quick } from "./lib/setup.js";

const path = exampleModel();
const device = selectBackend(undefined, { quiet: true });
const file = readGGUF(path);
const model = loadModelFromFile(file, device);
const tokenizer = tokenizerFromMetadata(file.metadata, path);
console.log(`model: ${path} (${model.config.arch}, vocabulary ${model.nVocab}, backend ${device})${quick ? " (quick mode)" : ""}`);

// --- 1. Score a sentence --------------------------------------------------------------------------
// `scoreTokens` reads the whole text in one forward pass (causal attention: position i sees
// tokens 0..i only) and at each position compares the model's prediction with the token that
// actually comes next. Position i's log-probability is that of token i + 1, so the first token
// has none: nothing came before it (a BOS token, when the vocabulary adds one, is that first
// token). `topK: 3` also returns the three tokens the model liked best at each position.
const text = "The cat sat on the mat because it was warm.";
const ids = tokenizer.encode(text);
const scores = scoreTokens(model, ids, { topK: 3 });
// A token's text on its own, as a stream decoder gives it (decode() would drop the space a
// SentencePiece text starts with); control tokens shown by name.
const piece = (id: number) => { const d = tokenizer.streamDecoder({ special: true }); return JSON.stringify(d.push(id) + d.flush()); };
const percent = (logprob: number) => {
  const p = Math.exp(logprob);
  return p >= 0.001 ? `${(100 * p).toFixed(1)}%` : p.toExponential(0);
};

console.log(`\n"${text}": ${ids.length} tokens, ${scores.tokensScored} scored\n`);
console.log("   #  token          log p       p   the model's top 3 guesses");
scores.positions.forEach((pos, i) => {
  if (pos.next === null) return;          // the last position predicts a token that is not there
  const guesses = pos.top.map(([id, lp]) => `${piece(id)} ${percent(lp)}`).join(", ");
  console.log(`  ${String(i + 1).padStart(2)}  ${piece(pos.next).padEnd(12)} ${pos.logprob!.toFixed(3).padStart(7)}  ${percent(pos.logprob!).padStart(6)}   ${guesses}`);
});

// --- 2. One number by hand ------------------------------------------------------------------------
// The model's output at a position is a row of logits, one per vocabulary entry. Softmax makes
// them probabilities, so log p(t) = logit(t) − logsumexp(logits). Recompute it for the most
// surprising token of the sentence, from the same forward pass scoreTokens made: all positions
// at once, "all" asking for every position's logits rather than the last one's.
const worst = scores.positions.reduce((w, p, i) => (p.logprob !== null && p.logprob < scores.positions[w].logprob! ? i : w), 0);
const all = model.forward(Int32Array.from(ids), model.newCache(ids.length), "all").data;      // [tokens, vocab]
const row = all.subarray(worst * model.nVocab, (worst + 1) * model.nVocab);                     // [vocab] at position `worst`
const next = ids[worst + 1];
console.log(`\nthe least likely token is ${piece(next)} (#${worst + 1}): logit ${row[next].toFixed(3)} − logsumexp ${logSumExp(row).toFixed(3)}` +
  ` = ${(row[next] - logSumExp(row)).toFixed(3)} (scoreTokens said ${scores.positions[worst].logprob!.toFixed(3)})`);

// --- 3. From tokens to the sentence -----------------------------------------------------------------
// The chain rule: log p(sentence | first token) is the sum of the per-token log-probabilities.
// Perplexity is exp of the mean negative log-probability: the number of equally likely tokens
// the model was, on average, choosing between.
const total = scores.positions.reduce((s, p) => s + (p.logprob ?? 0), 0);
console.log(`sum of log p: ${total.toFixed(3)} nats; mean −log p ${scores.nll.toFixed(3)}; perplexity ${scores.perplexity.toFixed(2)}`);

// --- 4. Two sentences, one word apart -------------------------------------------------------------
// A language model is a measure of surprise: change one word and the surprise moves to it.
const compare = (s: Scores) => `perplexity ${s.perplexity.toFixed(2).padStart(7)}, last word log p ${s.positions.at(-2)!.logprob!.toFixed(3)}`;
for (const sentence of ["The cat sat on the mat.", "The cat sat on the theorem."]) {
  const s = scoreTokens(model, tokenizer.encode(sentence.slice(0, -1)), { topK: 0 });  // without the ".": the last token is the last word
  console.log(`  ${JSON.stringify(sentence).padEnd(30)} ${compare(s)}`);
}
