// A ViT's algorithm card: the same Phuong & Hutter layout as the decoders' (render.ts), for an
// encoder over image patches; it parses back (parse.ts's readCardOf) into the VitConfig that
// builds the model. Every line is what src/archs/vit.ts computes for this config.

import { patchCount, patchSize, vitConfigProblem, type VitConfig } from "../archs/vitConfig.js";
import { count, float32Note, formatValue, num, shortNumber, word, type Hyperparameter } from "./hyperparameters.js";
import { readCardOf, type CardKind } from "./parse.js";
import { BODY_NOTE_COLUMN, group, NOTE_COLUMN, R, withNote, type CardMeta } from "./render.js";

export const VIT_CARD_STYLE = "(vision transformer encoder, Phuong & Hutter 2022 style)";

export const VIT_HYPERPARAMETERS: Hyperparameter<VitConfig>[] = [
  { symbol: "arch", kind: word({ vit: "vit" }), get: (c) => c.arch, note: () => "architecture: the vit forward pass below" },
  { symbol: "C", kind: count(1), get: (c) => c.channels, note: () => "image channels" },
  { symbol: "H_img", kind: count(1), get: (c) => c.height, note: () => "image height" },
  { symbol: "W_img", kind: count(1), get: (c) => c.width, note: () => "image width" },
  { symbol: "P", kind: count(1), get: (c) => c.patchSize, note: (c) => `patch side: n = ${patchCount(c)} patches of C·P² = ${patchSize(c)} values, T = n + 1 = ${patchCount(c) + 1} tokens` },
  { symbol: "d_e", kind: count(1), get: (c) => c.nEmbd, note: () => "embedding width" },
  { symbol: "L", kind: count(1), get: (c) => c.nLayer, note: () => "layers" },
  { symbol: "H", kind: count(1), get: (c) => c.nHead, note: () => "attention heads" },
  { symbol: "d_h", kind: count(1), get: (c) => c.headDim, note: (c) => `head size (H · d_h = ${c.nHead * c.headDim})` },
  { symbol: "d_mlp", kind: count(1), get: (c) => c.nFF, note: () => "MLP hidden width" },
  { symbol: "K", kind: count(2), get: (c) => c.nClasses, note: () => "classes" },
  { symbol: "ε", kind: num(true), get: (c) => c.normEps, note: (c) => `LayerNorm epsilon${float32Note(c.normEps)}` },
];

export function renderVitCard(c: VitConfig, meta: CardMeta = {}): string {
  const name = meta.name ?? (meta.path ? meta.path.split(/[\\/]/).pop() : undefined);
  const d = c.nEmbd, F = c.nFF, K = c.nClasses, n = patchCount(c), T = n + 1, p = patchSize(c), L = c.nLayer;
  const params: [string, string, number][] = [
    [`  W_p ∈ ${R(d, p)}, b_p ∈ ${R(d)}`, "patch projection (patch_embd)", d * p + d],
    [`  x_class ∈ ${R(d)}`, "class token (class_embd)", d],
    [`  W_pos ∈ ${R(T, d)}`, "learned positions (position_embd)", T * d],
    ["  for l = 0..L−1:", `L = ${L} layers, tensors blk.l.*`, 0],
    [`    γ¹_l, β¹_l ∈ ${R(d)}`, "attention norm (attn_norm)", 2 * d * L],
    [`    W_q,l, W_k,l, W_v,l ∈ ${R(d, d)}, b_q,l, b_k,l, b_v,l ∈ ${R(d)}`, "attn_q, attn_k, attn_v", 3 * (d * d + d) * L],
    [`    W_o,l ∈ ${R(d, d)}, b_o,l ∈ ${R(d)}`, "attention output (attn_output)", (d * d + d) * L],
    [`    γ²_l, β²_l ∈ ${R(d)}`, "MLP norm (ffn_norm)", 2 * d * L],
    [`    W_up,l ∈ ${R(F, d)}, b_up,l ∈ ${R(F)}, W_down,l ∈ ${R(d, F)}, b_down,l ∈ ${R(d)}`, "MLP (ffn_up, ffn_down)", (2 * F * d + F + d) * L],
    [`  γ, β ∈ ${R(d)}`, "final norm (output_norm)", 2 * d],
    [`  W_u ∈ ${R(K, d)}, b_u ∈ ${R(K)}`, "classifier head (output)", K * d + K],
  ];
  const algorithm: [string, string][] = [
    [`for i = 0..n−1: E[i] ← W_p · patch_i(x) + b_p`, `E: [${n}, ${d}]; patch i: rows P·⌊i/${c.width / c.patchSize}⌋.., columns P·(i mod ${c.width / c.patchSize}).., every channel`],
    ["X ← [x_class; E] + W_pos", `[T, ${d}], T = ${T}`],
    ["for l = 0..L−1:", `L = ${L}`],
    ["  X̃ ← LayerNorm(X | γ¹_l, β¹_l, ε)", `[T, ${d}], ε = ${shortNumber(c.normEps)}`],
    ["  Q ← X̃ W_q,lᵀ + b_q,l;  K ← X̃ W_k,lᵀ + b_k,l;  V ← X̃ W_v,lᵀ + b_v,l", `each [T, ${d}]`],
    [`  split Q, K and V into heads Q_h, K_h, V_h, h = 0..${c.nHead - 1}`, `each [T, ${c.headDim}]`],
    ["  for h = 0..H−1:", `H = ${c.nHead}`],
    ["    S ← τ · Q_h K_hᵀ", `[T, T], τ = 1/√d_h = 1/√${c.headDim}`],
    ["    Y_h ← softmax(S) V_h", `[T, ${c.headDim}], bidirectional: no mask`],
    [`  X ← X + [Y_0, …, Y_${c.nHead - 1}] W_o,lᵀ + b_o,l`, `[T, ${d}]`],
    ["  X̃ ← LayerNorm(X | γ²_l, β²_l, ε)", `[T, ${d}]`],
    ["  X ← X + GELU(X̃ W_up,lᵀ + b_up,l) W_down,lᵀ + b_down,l", `hidden [T, ${F}], GELU with tanh`],
    ["z ← LayerNorm(X[0] | γ, β, ε) W_uᵀ + b_u", `[${K}], from the class token's row`],
    ["return p ← softmax(z)", `[${K}]`],
  ];
  const lines = [
    `Algorithm: vit${name ? ` — ${name.replace(/\s+/g, " ").trim()}` : ""}  ${VIT_CARD_STYLE}`,
    "/* rows are tokens: X ∈ R^(T×d_e); matrices are out × in and apply as X Wᵀ; indices count from 0 */",
    `Input:  x ∈ R^(C×H_img×W_img) = R^(${c.channels}×${c.height}×${c.width}), an image standardized per channel`,
    `Output: p ∈ (0,1)^${K}, p[k] = P̂(class k | x)`,
    "Hyperparameters:",
    ...VIT_HYPERPARAMETERS.map((h) => withNote(`  ${h.symbol} = ${formatValue(h.kind, h.get(c))}`, h.note(c), NOTE_COLUMN)),
    `Parameters: θ, ${group(params.reduce((s, x) => s + x[2], 0))} numbers`,
    ...params.map(([text, note]) => withNote(text, note, BODY_NOTE_COLUMN)),
    "Algorithm:",
    ...algorithm.map(([text, note], i) => withNote(`${String(i + 1).padStart(2)}: ${text}`, note, BODY_NOTE_COLUMN)),
  ];
  return lines.join("\n") + "\n";
}

const VIT_CARD: CardKind<VitConfig> = {
  style: VIT_CARD_STYLE,
  hyperparameters: VIT_HYPERPARAMETERS,
  build(get, _given, fail) {
    const c: VitConfig = {
      arch: get("arch"), channels: get("C"), height: get("H_img"), width: get("W_img"), patchSize: get("P"),
      nEmbd: get("d_e"), nLayer: get("L"), nHead: get("H"), headDim: get("d_h"), nFF: get("d_mlp"), nClasses: get("K"), normEps: get("ε"),
    };
    const problem = vitConfigProblem(c);
    if (problem) fail(c.height % c.patchSize !== 0 || c.width % c.patchSize !== 0 ? "P" : "d_h", problem);
    return c;
  },
  arch: (c) => c.arch,
  render: renderVitCard,
};

/** A ViT's card back into its config. */
export function readVitCard(text: string, source = "card"): { config: VitConfig; meta: CardMeta } {
  return readCardOf(VIT_CARD, text, source);
}

/** Is this the card of a ViT (by its title)? */
export const isVitCard = (text: string): boolean => /^\s*Algorithm:\s*vit(\s|$)/.test(text);
