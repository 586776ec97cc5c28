// Algorithm cards: a model written out as pseudocode in the style of Phuong & Hutter, "Formal
// Algorithms for Transformers" (arXiv:2207.09238): a header (input, output, hyperparameters,
// parameters with their shapes), then numbered lines with shape annotations. Every line is what
// src/archs and src/blocks compute for this config. Rows are tokens (X ∈ R^(T×d_e)), matrices
// are stored out × in and applied as X Wᵀ, and indices count from 0 as the file's blk.l do.

import type { ModelConfig } from "../archs/config.js";
import { formatValue, HYPERPARAMETERS, shortNumber } from "./hyperparameters.js";

export interface CardMeta {
  /** The model's name (general.name), shown in the title. */
  name?: string;
  /** The file it was read from (its base name is the title when there is no name). */
  path?: string;
}

export const CARD_STYLE = "(decoder-only transformer, Phuong & Hutter 2022 style)";
export const NOTE_MARK = "▷";
export const NOTE_COLUMN = 34;
export const BODY_NOTE_COLUMN = 62;

/** Display width: code points, not counting combining marks (the tilde of X̃). */
export function displayWidth(s: string): number {
  return [...s.replace(/\p{M}/gu, "")].length;
}

export const withNote = (text: string, note: string, column: number): string =>
  note === "" ? text : text + " ".repeat(Math.max(2, column - displayWidth(text))) + `${NOTE_MARK} ${note}`;

export const R = (...dims: number[]): string => dims.length === 1 ? `R^${dims[0]}` : `R^(${dims.join("×")})`;
export const group = (n: number): string => n.toLocaleString("en-US");

export function renderCard(config: ModelConfig, meta: CardMeta = {}): string {
  const name = meta.name ?? (meta.path ? meta.path.split(/[\\/]/).pop() : undefined);
  const lines = [
    `Algorithm: ${config.arch}${name ? ` — ${name.replace(/\s+/g, " ").trim()}` : ""}  ${CARD_STYLE}`,
    `/* rows are tokens: X ∈ R^(T×d_e); matrices are out × in and apply as X Wᵀ; indices count from 0 */`,
    `Input:  x ∈ [N_V]^T, token ids; N_V = ${config.nVocab}, T ≤ ℓ_max = ${config.contextLength}`,
    `Output: P ∈ (0,1)^(T×${config.nVocab}), P[t] = P̂(x[t+1] | x[0..t]), the next-token distributions`,
    "Hyperparameters:",
    ...HYPERPARAMETERS.filter((h) => h.present?.(config) ?? true).map((h) =>
      withNote(`  ${h.symbol} = ${formatValue(h.kind, h.get(config))}`, h.note(config), NOTE_COLUMN)),
    ...renderDerived(config),
  ];
  return lines.join("\n") + "\n";
}

/** The parameters and the numbered algorithm: everything that follows from the hyperparameters. */
export function renderDerived(c: ModelConfig): string[] {
  const params = parameterLines(c);
  const total = params.reduce((s, p) => s + p.count, 0);
  return [
    `Parameters: θ, ${group(total)} numbers${c.tiedOutput ? " (W_u is W_e)" : ""}`,
    ...params.map((p) => withNote(p.text, p.note, BODY_NOTE_COLUMN)),
    "Algorithm:",
    ...algorithmLines(c).map(([text, note], i) => withNote(`${String(i + 1).padStart(2)}: ${text}`, note, BODY_NOTE_COLUMN)),
  ];
}

interface ParameterLine { text: string; note: string; count: number }

function parameterLines(c: ModelConfig): ParameterLine[] {
  const d = c.nEmbd, L = c.nLayer, qW = c.nHead * c.headDim, kvW = c.nKVHead * c.headDim, F = c.nFF, V = c.nVocab;
  const a = c.attention, layer = c.norm.kind === "layer";
  const out: ParameterLine[] = [];
  const top = (text: string, note: string, count: number) => out.push({ text: `  ${text}`, note, count });
  const blk = (text: string, note: string, count: number) => out.push({ text: `    ${text}`, note, count: count * L });
  const normParam = (sym: string, width: number) => layer ? `${sym}, ${sym.replace("γ", "β")} ∈ ${R(width)}` : `${sym} ∈ ${R(width)}`;
  const normCount = (width: number) => (layer ? 2 : 1) * width;

  top(`W_e ∈ ${R(V, d)}`, "token embedding (token_embd)", V * d);
  if (!c.rope) top(`W_p ∈ ${R(c.contextLength, d)}`, "learned position embedding (position_embd)", c.contextLength * d);
  if (c.rope?.freqFactors) top(`f ∈ ${R(c.rope.dims / 2)}`, "RoPE frequency divisors (rope_freqs)", c.rope.dims / 2);
  out.push({ text: "  for l = 0..L−1:", note: `L = ${L} layers, tensors blk.l.*`, count: 0 });
  blk(normParam("γ¹_l", d), "attention norm (attn_norm)", normCount(d));
  if (a.fusedQKV) {
    blk(`W_qkv,l ∈ ${R(qW + 2 * kvW, d)}${a.qkvBias ? `, b_qkv,l ∈ ${R(qW + 2 * kvW)}` : ""}`, "fused q, k, v projection (attn_qkv)", (qW + 2 * kvW) * (d + (a.qkvBias ? 1 : 0)));
  } else {
    blk(`W_q,l ∈ ${R(qW, d)}, W_k,l ∈ ${R(kvW, d)}, W_v,l ∈ ${R(kvW, d)}`, "attn_q, attn_k, attn_v", (qW + 2 * kvW) * d);
    if (a.qkvBias) blk(`b_q,l ∈ ${R(qW)}, b_k,l ∈ ${R(kvW)}, b_v,l ∈ ${R(kvW)}`, "their biases", qW + 2 * kvW);
  }
  if (a.qkNorm === "head") blk(`γ^q_l, γ^k_l ∈ ${R(c.headDim)}`, "per-head q and k norms (attn_q_norm, attn_k_norm)", 2 * c.headDim);
  if (a.qkNorm === "full") blk(`γ^q_l ∈ ${R(qW)}, γ^k_l ∈ ${R(kvW)}`, "q and k norms (attn_q_norm, attn_k_norm)", qW + kvW);
  blk(`W_o,l ∈ ${R(d, qW)}${a.outBias ? `, b_o,l ∈ ${R(d)}` : ""}`, "attention output (attn_output)", d * qW + (a.outBias ? d : 0));
  if (c.postNorms) blk(normParam("γ̂¹_l", d), "post-attention norm (post_attention_norm)", normCount(d));
  blk(normParam("γ²_l", d), "feed-forward norm (ffn_norm)", normCount(d));
  if (c.ffn.experts > 0) {
    const E = c.ffn.experts;
    blk(`W_r,l ∈ ${R(E, d)}`, "router (ffn_gate_inp)", E * d);
    blk(`for e = 0..E−1: W_gate,l,e, W_up,l,e ∈ ${R(F, d)}, W_down,l,e ∈ ${R(d, F)}`, `E = ${E} experts (ffn_gate_exps, ffn_up_exps, ffn_down_exps)`, E * 3 * F * d);
  } else if (c.ffn.kind === "mlp") {
    blk(`W_up,l ∈ ${R(F, d)}${c.ffn.bias ? `, b_up,l ∈ ${R(F)}` : ""}, W_down,l ∈ ${R(d, F)}${c.ffn.bias ? `, b_down,l ∈ ${R(d)}` : ""}`, "MLP (ffn_up, ffn_down)", 2 * F * d + (c.ffn.bias ? F + d : 0));
  } else {
    blk(`W_gate,l, W_up,l ∈ ${R(F, d)}, W_down,l ∈ ${R(d, F)}`, "feed-forward (ffn_gate, ffn_up, ffn_down)", 3 * F * d);
  }
  if (c.postNorms) blk(normParam("γ̂²_l", d), "post-feed-forward norm (post_ffw_norm)", normCount(d));
  top(normParam("γ", d), "final norm (output_norm)", normCount(d));
  if (c.tiedOutput) top("W_u = W_e", "unembedding, tied to the token embedding", 0);
  else top(`W_u ∈ ${R(V, d)}`, "unembedding (output)", V * d);
  return out;
}

type Line = [text: string, note: string];

/** "Q_0..Q_8", or the heads one by one when there are one or two. */
const heads = (sym: string, n: number): string => n <= 2 ? Array.from({ length: n }, (_, i) => `${sym}_${i}`).join(", ") : `${sym}_0..${sym}_${n - 1}`;

function algorithmLines(c: ModelConfig): Line[] {
  const d = c.nEmbd, H = c.nHead, Hkv = c.nKVHead, dh = c.headDim, qW = H * dh, kvW = Hkv * dh, a = c.attention;
  const normOf = (x: string, g: string) => c.norm.kind === "rms" ? `RMSNorm(${x} | ${g}, ε)` : `LayerNorm(${x} | ${g}, ${g.replace("γ", "β")}, ε)`;
  const lines: Line[] = [];
  const add = (indent: number, text: string, note = "") => lines.push(["  ".repeat(indent) + text, note]);

  // Embedding.
  if (!c.rope) add(0, "for t = 0..T−1: X[t] ← W_e[x[t]] + W_p[t]", `X: [T, ${d}], learned positions`);
  else add(0, "for t = 0..T−1: X[t] ← W_e[x[t]]", `X: [T, ${d}]`);
  if (c.embedScale !== 1) add(0, "X ← s_e · X", `s_e = ${c.embedScale}`);

  add(0, "for l = 0..L−1:", `L = ${c.nLayer}`);
  // Attention.
  add(1, `X̃ ← ${normOf("X", "γ¹_l")}`, `[T, ${d}], ε = ${shortNumber(c.norm.eps)}`);
  const b = (sym: string) => (a.qkvBias ? ` + b_${sym},l` : "");
  if (a.fusedQKV) add(1, `[Q | K | V] ← X̃ W_qkv,lᵀ${b("qkv")}`, `[T, ${qW + 2 * kvW}] split ${qW} | ${kvW} | ${kvW}`);
  else add(1, `Q ← X̃ W_q,lᵀ${b("q")};  K ← X̃ W_k,lᵀ${b("k")};  V ← X̃ W_v,lᵀ${b("v")}`, `Q: [T, ${qW}]; K, V: [T, ${kvW}]`);
  if (a.qkNorm === "full") add(1, "Q ← RMSNorm(Q | γ^q_l, ε);  K ← RMSNorm(K | γ^k_l, ε)", `over each row: ${qW} and ${kvW} wide`);
  add(1, `split Q into heads ${heads("Q", H)}, K and V into ${heads("K", Hkv)} and ${heads("V", Hkv)}`, `each [T, ${dh}]`);
  if (a.qkNorm === "head") add(1, "for each head h: Q_h ← RMSNorm(Q_h | γ^q_l, ε);  K_h ← RMSNorm(K_h | γ^k_l, ε)", `per row of ${dh}`);
  if (c.rope) {
    const r = c.rope, pairs = r.style === "interleaved" ? "(2i, 2i+1)" : `(i, i + ${r.dims / 2})`;
    add(1, "for t = 0..T−1 and each head h: Q_h[t] ← RoPE(Q_h[t], t);  K_h[t] ← RoPE(K_h[t], t)", `positions t = 0..T−1`);
    add(2, `RoPE(q, p) rotates each pair ${pairs}, i = 0..${r.dims / 2 - 1}, by angle p · ω_i`, r.dims < dh ? `dims ${r.dims}..${dh - 1} pass through` : `all ${dh} dims rotate`);
    add(2, `ω_i = s_rope · θ^(−2i/d_rot)${r.freqFactors ? " / f_i" : ""}`, `θ = ${r.base}, d_rot = ${r.dims}, s_rope = ${r.freqScale}`);
    if (r.sliding) add(2, "on sliding-window layers θ ← θ_swa, s_rope ← s_rope_swa", `θ_swa = ${r.sliding.base}, s_rope_swa = ${r.sliding.freqScale}`);
  }
  const g = H / Hkv;
  add(1, "for h = 0..H−1:", g === 1 ? `H = ${H}, KV head g(h) = h` : `H = ${H}, KV head g(h) = ⌊h / ${g}⌋`);
  add(2, "S ← τ · Q_h K_g(h)ᵀ", `[T, T], τ = ${a.scale}`);
  if (a.softcap > 0) add(2, "S ← c_attn · tanh(S / c_attn)", `c_attn = ${a.softcap}`);
  const p = a.windowPattern;
  if (a.window > 0 && p === 0) add(2, "S[t, t′] ← −∞ unless t − w < t′ ≤ t", `causal sliding window, w = ${a.window}`);
  else if (a.window > 0 && p === 2) {
    add(2, "S[t, t′] ← −∞ unless t′ ≤ t (and, when l is even, t − w < t′)", `causal; window w = ${a.window} on l = 0, 2, 4, …`);
  } else if (a.window > 0 && p > 2) {
    add(2, `S[t, t′] ← −∞ unless t′ ≤ t (and, when l mod ${p} < ${p - 1}, t − w < t′)`, `causal; window w = ${a.window} on l = 0..${p - 2}, ${p}..${2 * p - 2}, …`);
  } else add(2, "S[t, t′] ← −∞ unless t′ ≤ t", "causal mask");
  add(2, "Y_h ← softmax(S) V_g(h)", `[T, ${dh}], softmax over t′`);
  add(1, `A ← [Y_0, …, Y_${H - 1}] W_o,lᵀ${a.outBias ? " + b_o,l" : ""}`, `[T, ${d}]`);
  add(1, c.postNorms ? `X ← X + ${normOf("A", "γ̂¹_l")}` : "X ← X + A", `[T, ${d}]`);
  // Feed-forward.
  add(1, `X̃ ← ${normOf("X", "γ²_l")}`, `[T, ${d}]`);
  if (c.ffn.experts > 0) {
    const E = c.ffn.experts, k = c.ffn.expertsUsed;
    add(1, "for t = 0..T−1:");
    add(2, "π ← softmax(X̃[t] W_r,lᵀ)", `[${E}], router probabilities`);
    add(2, `𝓔 ← the ${k} experts e with the largest π_e`, `k = ${k} of E = ${E}; ties → smaller e`);
    add(2, "F[t] ← Σ_{e ∈ 𝓔} π_e · (SiLU(X̃[t] W_gate,l,eᵀ) ⊙ X̃[t] W_up,l,eᵀ) W_down,l,eᵀ", `[${d}], π not renormalized; hidden [${c.nFF}]`);
  } else if (c.ffn.kind === "mlp") {
    const fb = c.ffn.bias;
    add(1, `F ← GELU(X̃ W_up,lᵀ${fb ? " + b_up,l" : ""}) W_down,lᵀ${fb ? " + b_down,l" : ""}`, `hidden [T, ${c.nFF}], GELU with tanh`);
  } else {
    const act = c.ffn.kind === "swiglu" ? "SiLU" : "GELU";
    add(1, `F ← (${act}(X̃ W_gate,lᵀ) ⊙ X̃ W_up,lᵀ) W_down,lᵀ`, `hidden [T, ${c.nFF}]${act === "GELU" ? ", GELU with tanh" : ""}`);
  }
  add(1, c.postNorms ? `X ← X + ${normOf("F", "γ̂²_l")}` : "X ← X + F", `[T, ${d}]`);
  // Output.
  add(0, `X ← ${normOf("X", "γ")}`, `[T, ${d}]`);
  add(0, "Z ← X W_uᵀ", `[T, ${c.nVocab}]${c.tiedOutput ? ", W_u = W_e" : ""}`);
  if (c.finalSoftcap > 0) add(0, "Z ← c_out · tanh(Z / c_out)", `c_out = ${c.finalSoftcap}`);
  add(0, "return P ← softmax(Z), row by row", `[T, ${c.nVocab}]`);
  return lines;
}
