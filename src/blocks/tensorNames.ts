// The GGUF tensor names (llama.cpp's), spelled here once. A name without `.weight` / `.bias`
// is a layer: `layer.weight` and, where it has one, `layer.bias`.

export interface LayerNames {
  weight: string;
  bias: string;
}

const layer = (prefix: string): LayerNames => ({ weight: `${prefix}.weight`, bias: `${prefix}.bias` });

/** The model-wide tensors. */
export const TENSORS = {
  tokenEmbd: "token_embd.weight",
  positionEmbd: "position_embd.weight",
  ropeFreqs: "rope_freqs.weight",
  outputNorm: layer("output_norm"),
  output: layer("output"),
  // ViT (docs/vit.md)
  patchEmbd: layer("patch_embd"),
  classEmbd: "class_embd.weight",
} as const;

/** The tensors of block l (`blk.l.*`). */
export interface BlockNames {
  attnNorm: LayerNames;
  attnQ: LayerNames;
  attnK: LayerNames;
  attnV: LayerNames;
  /** q, k, v in one projection (GPT-2). */
  attnQKV: LayerNames;
  attnOutput: LayerNames;
  attnQNorm: LayerNames;
  attnKNorm: LayerNames;
  postAttnNorm: LayerNames;
  ffnNorm: LayerNames;
  ffnGate: LayerNames;
  ffnUp: LayerNames;
  ffnDown: LayerNames;
  /** Mixture of experts: the router and the experts' stacked gate, up and down [in, out, experts]. */
  ffnRouter: LayerNames;
  ffnGateExps: LayerNames;
  ffnUpExps: LayerNames;
  ffnDownExps: LayerNames;
  postFfnNorm: LayerNames;
}

/** The projection names a LoRA adapter may pair with (`blk.l.<name>.weight`). */
export const BLOCK_MATRICES = ["attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_gate", "ffn_up", "ffn_down"] as const;

const cache: BlockNames[] = [];

/** Block l's tensor names (built once per l: the decode path only reads them). */
export function blockNames(l: number): BlockNames {
  let n = cache[l];
  if (!n) {
    const b = (s: string) => layer(`blk.${l}.${s}`);
    n = cache[l] = {
      attnNorm: b("attn_norm"), attnQ: b("attn_q"), attnK: b("attn_k"), attnV: b("attn_v"), attnQKV: b("attn_qkv"),
      attnOutput: b("attn_output"), attnQNorm: b("attn_q_norm"), attnKNorm: b("attn_k_norm"),
      postAttnNorm: b("post_attention_norm"), ffnNorm: b("ffn_norm"),
      ffnGate: b("ffn_gate"), ffnUp: b("ffn_up"), ffnDown: b("ffn_down"),
      ffnRouter: b("ffn_gate_inp"), ffnGateExps: b("ffn_gate_exps"), ffnUpExps: b("ffn_up_exps"), ffnDownExps: b("ffn_down_exps"),
      postFfnNorm: b("post_ffw_norm"),
    };
  }
  return n;
}
