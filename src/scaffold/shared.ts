// Files both scaffolds get. Templates are plain strings (so tsc carries them into dist);
// {{name}} is replaced by the project's name. Generated code avoids template literals.

/** toy is a live checkout linked with `file:`: installing a project must not rebuild it. */
export const NPMRC = `# toy is linked from a local checkout ("file:" in package.json) and is already built there;
# do not run its install scripts (a native rebuild) each time this project installs.
ignore-scripts=true
`;

export const GITIGNORE = `node_modules/
runs/
*.gguf
`;

/** A tiny random llama-family GGUF, written by toy's own writer, for tests that need no download. */
export const TINY_MODEL = `// A tiny random model as GGUF bytes, written with toy's own writer: it loads and runs like a
// real checkpoint (SentencePiece vocabulary with byte fallback, so any text tokenizes), and the
// same options give the same bytes.

import { encodeGGUF, GGMLType, GGUFValueType } from "toy";

/** mulberry32: a small seeded generator of uniform numbers in [0, 1). */
function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** <unk> <s> </s>, the 256 byte tokens, then single letters with and without the word mark. */
function vocabulary() {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3]; // unknown, control, control
  for (let b = 0; b < 256; b++) {
    tokens.push("<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">");
    types.push(6); // byte
  }
  for (const l of "abcdefghijklmnopqrstuvwxyz") {
    tokens.push("\\u2581" + l, l);
    types.push(1, 1); // normal
  }
  const scores = Float32Array.from(types, (t, i) => (t === 1 ? -i : 0));
  return { tokens, scores, types: Int32Array.from(types) };
}

/**
 * The GGUF bytes of a random decoder with llama's tensor names, its hyperparameters stored
 * under "<arch>.*" so that any architecture reading llama-like metadata can load it.
 * zeroFeedForward: every ffn_down is zero, so each block's feed-forward adds nothing.
 */
export function tinyModel({ arch = "llama", nEmbd = 32, nLayer = 2, nHead = 4, nKVHead = 2, nFF = 64, ctx = 128, seed = 1, zeroFeedForward = false } = {}) {
  const rand = uniform(seed);
  const headDim = nEmbd / nHead;
  const vocab = vocabulary();
  const nVocab = vocab.tokens.length;
  const tensors = [];
  const add = (name, dims, values) => tensors.push({ name, dims, type: GGMLType.F32, bytes: new Uint8Array(values.buffer) });
  const matrix = (name, cols, rows, scale) => add(name, [cols, rows], Float32Array.from({ length: cols * rows }, () => scale * (2 * rand() - 1)));
  const normWeight = (name) => add(name, [nEmbd], Float32Array.from({ length: nEmbd }, () => 1 + 0.1 * (2 * rand() - 1)));

  matrix("token_embd.weight", nEmbd, nVocab, 0.8);
  for (let l = 0; l < nLayer; l++) {
    const b = "blk." + l;
    normWeight(b + ".attn_norm.weight");
    matrix(b + ".attn_q.weight", nEmbd, nHead * headDim, 0.4);
    matrix(b + ".attn_k.weight", nEmbd, nKVHead * headDim, 0.4);
    matrix(b + ".attn_v.weight", nEmbd, nKVHead * headDim, 0.4);
    matrix(b + ".attn_output.weight", nHead * headDim, nEmbd, 0.2);
    normWeight(b + ".ffn_norm.weight");
    matrix(b + ".ffn_gate.weight", nEmbd, nFF, 0.4);
    matrix(b + ".ffn_up.weight", nEmbd, nFF, 0.4);
    matrix(b + ".ffn_down.weight", nFF, nEmbd, zeroFeedForward ? 0 : 0.2);
  }
  normWeight("output_norm.weight");
  matrix("output.weight", nEmbd, nVocab, 0.4);

  const U32 = GGUFValueType.UINT32, F32 = GGUFValueType.FLOAT32, ARRAY = GGUFValueType.ARRAY;
  const metadata = [
    ["general.architecture", arch],
    ["general.name", "tiny-" + arch],
    [arch + ".context_length", ctx, U32],
    [arch + ".embedding_length", nEmbd, U32],
    [arch + ".block_count", nLayer, U32],
    [arch + ".feed_forward_length", nFF, U32],
    [arch + ".attention.head_count", nHead, U32],
    [arch + ".attention.head_count_kv", nKVHead, U32],
    [arch + ".attention.layer_norm_rms_epsilon", 1e-5, F32],
    [arch + ".rope.freq_base", 10000, F32],
    ["tokenizer.ggml.model", "llama"],
    ["tokenizer.ggml.tokens", vocab.tokens, ARRAY, GGUFValueType.STRING],
    ["tokenizer.ggml.scores", vocab.scores, ARRAY, F32],
    ["tokenizer.ggml.token_type", vocab.types, ARRAY, GGUFValueType.INT32],
    ["tokenizer.ggml.bos_token_id", 1, U32],
    ["tokenizer.ggml.eos_token_id", 2, U32],
    ["tokenizer.ggml.unknown_token_id", 0, U32],
    ["tokenizer.ggml.add_bos_token", true],
  ];
  return encodeGGUF({ metadata, tensors });
}
`;
