// ViT, the Vision Transformer (Dosovitskiy et al. 2020): an image is cut into P×P patches, each
// patch projected to a d-wide token; a learned class token goes in front, learned positions are
// added, and pre-norm encoder blocks with bidirectional attention mix the tokens. The class
// token's final state, LayerNorm-ed, gives the class logits. The blocks are the decoders'
// blocks (blocks/transformerBlock.ts) with the causal mask off: each image is one "sequence"
// whose keys are all its T rows.

import type { Device } from "../backends/kernels.js";
import { KVCache, type Segment } from "../blocks/kvCache.js";
import { norm, type NormWeights } from "../blocks/norm.js";
import type { BlockConfig, BlockWeights } from "../blocks/transformerBlock.js";
import { transformerBlock } from "../blocks/transformerBlock.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import type { Normalization } from "../io/images/imageSet.js";
import { add, gatherRows, matmul } from "../primitives/index.js";
import { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";
import { patchCount, patchSize, vitConfigOf, vitLabelsOf, type VitConfig } from "./vitConfig.js";
import { ModelWeights, toFloat32 } from "./weights.js";

export interface VitWeights {
  patch: Weight; patchBias: Float32Array;   // [d, C·P·P], [d]
  classToken: Float32Array;                 // [d]
  positions: Float32Array;                  // [T, d]
  blocks: BlockWeights[];
  block: BlockConfig;
  outputNorm: NormWeights;
  output: Weight; outputBias: Float32Array; // [classes, d], [classes]
}

/** [B, C·H·W] images → [B·n, C·P·P] patches, row-major over the patch grid; a patch's values in
 *  (channel, row, column) order, as PyTorch's Conv2d weight [d, C, P, P] flattens. */
export function patchify(pixels: Float32Array, B: number, c: VitConfig): Float32Array {
  const P = c.patchSize, gw = c.width / P, n = patchCount(c), size = patchSize(c), plane = c.height * c.width;
  const out = new Float32Array(B * n * size);
  for (let b = 0; b < B; b++) {
    for (let p = 0; p < n; p++) {
      const y0 = Math.floor(p / gw) * P, x0 = (p % gw) * P;
      let o = (b * n + p) * size;
      for (let ch = 0; ch < c.channels; ch++) {
        const base = (b * c.channels + ch) * plane;
        for (let y = 0; y < P; y++) for (let x = 0; x < P; x++) out[o++] = pixels[base + (y0 + y) * c.width + x0 + x];
      }
    }
  }
  return out;
}

//   E = patchify(image) W_pᵀ + b_p                                  [n, d]
//   X = [x_class; E] + W_pos                                        [T = n + 1, d]
//   for each layer:  X = X + Attn(LN(X)),  X = X + MLP(LN(X))      bidirectional
//   z = LN(X[0]) W_uᵀ + b_u                                         [classes]
export function vitForward(w: VitWeights, c: VitConfig, pixels: Tensor): Tensor {
  const B = pixels.shape[0], n = patchCount(c), T = n + 1, d = c.nEmbd;
  const E = matmul(new Tensor([B * n, patchSize(c)], patchify(pixels.data, B, c), pixels.device), w.patch, w.patchBias); // [B·n, d]
  let x = new Tensor([B * T, d], new Float32Array(B * T * d), pixels.device);       // [B·T, d]
  const segments: Segment[] = [];
  for (let b = 0; b < B; b++) {
    x.data.set(w.classToken, b * T * d);                                           // row 0: the class token
    x.data.set(E.data.subarray(b * n * d, (b + 1) * n * d), (b * T + 1) * d);     // rows 1..n: the patches
    segments.push({ cache: new KVCache(c.nLayer, T, d), start: b * T, length: T, pos0: 0 }); // image b: one sequence, all T rows seen
  }
  const positions = new Int32Array(B * T).map((_, i) => i % T);
  x = add(x, new Tensor([B * T, d], tile(w.positions, B), pixels.device));          // [B·T, d]
  w.blocks.forEach((block, l) => {
    x = transformerBlock(x, block, w.block, segments, l, positions);              // [B·T, d]
  });
  const cls = gatherRows(x, Array.from({ length: B }, (_, b) => b * T));           // [B, d]
  return matmul(norm(cls, w.outputNorm), w.output, w.outputBias);                  // [B, classes]
}

const tile = (rows: Float32Array, times: number): Float32Array => {
  const out = new Float32Array(rows.length * times);
  for (let i = 0; i < times; i++) out.set(rows, i * rows.length);
  return out;
};

/** The weights of a ViT file (names in docs/vit.md). */
export function loadVitWeights(file: GGUFFile, c: VitConfig): VitWeights {
  const w = new ModelWeights(file), d = c.nEmbd, F = c.nFF, T = patchCount(c) + 1;
  const layerNorm = (name: string): NormWeights => ({ kind: "layer", eps: c.normEps, weight: w.vector(`${name}.weight`, d), bias: w.vector(`${name}.bias`, d) });
  const blocks = Array.from({ length: c.nLayer }, (_, l): BlockWeights => {
    const b = `blk.${l}`, mat = (k: string, cols: number, rows: number) => w.need(`${b}.${k}.weight`, [cols, rows]);
    return {
      attnNorm: layerNorm(`${b}.attn_norm`),
      attn: {
        q: mat("attn_q", d, d), k: mat("attn_k", d, d), v: mat("attn_v", d, d), o: mat("attn_output", d, d),
        qBias: w.vector(`${b}.attn_q.bias`, d), kBias: w.vector(`${b}.attn_k.bias`, d), vBias: w.vector(`${b}.attn_v.bias`, d),
        oBias: w.vector(`${b}.attn_output.bias`, d),
      },
      ffnNorm: layerNorm(`${b}.ffn_norm`),
      ffn: { up: mat("ffn_up", d, F), down: mat("ffn_down", F, d), upBias: w.vector(`${b}.ffn_up.bias`, F), downBias: w.vector(`${b}.ffn_down.bias`, d) },
    };
  });
  return {
    patch: w.need("patch_embd.weight", [patchSize(c), d]), patchBias: w.vector("patch_embd.bias", d),
    classToken: w.vector("class_embd.weight", d),
    positions: toFloat32(w.need("position_embd.weight", [d, T])),
    blocks,
    block: {
      attn: {
        heads: c.nHead, kvHeads: c.nHead, headDim: c.headDim, rope: null, invFreq: new Float32Array(0), qkNorm: null, normEps: c.normEps,
        attn: { scale: 1 / Math.sqrt(c.headDim), softcap: 0, window: 0, causal: false },
      },
      ffn: "mlp", expertsUsed: 0,
    },
    outputNorm: layerNorm("output_norm"),
    output: w.need("output.weight", [d, c.nClasses]), outputBias: w.vector("output.bias", c.nClasses),
  };
}

/** A loaded image classifier: class logits for a batch of standardized images. */
export interface VisionModel {
  readonly file: GGUFFile;
  readonly device: Device;
  readonly config: VitConfig;
  /** The class names, by label id. */
  readonly classes: string[];
  /** The standardization the training images had (apply it to new [0, 1] pixels). */
  readonly normalization: Normalization | null;
  /** pixels [B, C·H·W] → logits [B, classes] */
  forward(pixels: Float32Array, B: number): Tensor;
}

export function loadVisionModel(file: GGUFFile, device: Device): VisionModel {
  const config = vitConfigOf(file);
  const weights = loadVitWeights(file, config);
  const { classes, normalization } = vitLabelsOf(file, config);
  const size = config.channels * config.height * config.width;
  return {
    file, device, config, classes, normalization,
    forward(pixels, B) {
      if (pixels.length !== B * size) throw new RangeError(`vit: ${B} images of ${config.channels}×${config.height}×${config.width} need ${B * size} values, got ${pixels.length}`);
      return vitForward(weights, config, new Tensor([B, size], pixels, device));
    },
  };
}
