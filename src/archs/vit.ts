// ViT, the Vision Transformer (Dosovitskiy et al. 2020): an image is cut into P×P patches, each
// patch projected to a d-wide token; a learned class token goes in front, learned positions are
// added, and pre-norm encoder blocks with bidirectional attention mix the tokens. The class
// token's final state, LayerNorm-ed, gives the class logits. The blocks are the decoders'
// blocks (blocks/transformerBlock.ts) with the causal mask off: each image is one sequence
// whose keys are all its T rows. vitForward runs for inference and training alike (blocks/ops.ts).

import type { Device } from "../backends/kernels.js";
import { InferenceOps, RopeTables } from "../blocks/inferenceOps.js";
import type { Segment } from "../blocks/kvCache.js";
import { norm } from "../blocks/norm.js";
import type { Ops, Value } from "../blocks/ops.js";
import { blockNames, TENSORS } from "../blocks/tensorNames.js";
import { transformerBlock, type BlockConfig } from "../blocks/transformerBlock.js";
import type { GGUFFile } from "../io/gguf/reader.js";
import type { Normalization } from "../io/images/imageSet.js";
import type { Tensor } from "../tensor/tensor.js";
import type { TensorSpec } from "./layers.js";
import { patchCount, patchSize, vitConfigOf, vitLabelsOf, type VitConfig } from "./vitConfig.js";
import { ModelWeights } from "./weights.js";

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

/** Every encoder block's settings: LayerNorm, biased projections, bidirectional attention, GELU MLP. */
export function vitBlockConfig(c: VitConfig): BlockConfig {
  return {
    norm: { kind: "layer", eps: c.normEps },
    attn: {
      heads: c.nHead, kvHeads: c.nHead, headDim: c.headDim, qkvBias: true, fusedQKV: false, outBias: true,
      qkNorm: null, normEps: c.normEps, rope: null,
      attn: { scale: 1 / Math.sqrt(c.headDim), softcap: 0, window: 0, causal: false },
    },
    ffn: { kind: "mlp", bias: true, experts: 0, expertsUsed: 0, width: c.nFF },
    postNorms: false,
  };
}

//   E = patches W_pᵀ + b_p                                          [B·n, d]
//   X = [x_class; E_b] + W_pos, for each image b                    [B·T, d], T = n + 1
//   for each layer:  X = X + Attn(LN(X)),  X = X + MLP(LN(X))      bidirectional, per image
//   z = LN(X[class rows]) W_uᵀ + b_u                                [B, classes]
/** patches: [B·n, C·P·P] (patchify) → class logits [B, classes]; ops' sequences are the B images. */
export function vitForward<X extends Value>(ops: Ops<X>, c: VitConfig, patches: X, B: number): X {
  const n = patchCount(c), T = n + 1, d = c.nEmbd, block = vitBlockConfig(c);
  const E = ops.linear(patches, TENSORS.patchEmbd.weight, TENSORS.patchEmbd.bias);   // [B·n, d]
  const cls = ops.reshape(ops.param(TENSORS.classEmbd), [1, d]);                      // [1, d]
  let x = ops.concatRows(Array.from({ length: B }, (_, b) => [cls, ops.sliceRows(E, b * n, (b + 1) * n)]).flat()); // [B·T, d]
  x = ops.add(x, ops.embedding(TENSORS.positionEmbd, ops.positions));                // [B·T, d]
  for (let l = 0; l < c.nLayer; l++) x = transformerBlock(ops, x, block, l);        // [B·T, d]
  const first = ops.gatherRows(x, Array.from({ length: B }, (_, b) => b * T));       // [B, d], the class tokens
  return ops.linear(norm(ops, first, TENSORS.outputNorm, block.norm), TENSORS.output.weight, TENSORS.output.bias); // [B, classes]
}

/** The tensors of a ViT (names in docs/vit.md), with their ggml dims. */
export function vitTensors(c: VitConfig): TensorSpec[] {
  const d = c.nEmbd, F = c.nFF, T = patchCount(c) + 1;
  const specs: TensorSpec[] = [];
  const linear = (n: { weight: string; bias: string }, cols: number, rows: number) => specs.push({ name: n.weight, dims: [cols, rows] }, { name: n.bias, dims: [rows] });
  const layerNorm = (n: { weight: string; bias: string }) => specs.push({ name: n.weight, dims: [d] }, { name: n.bias, dims: [d] });
  linear(TENSORS.patchEmbd, patchSize(c), d);
  specs.push({ name: TENSORS.classEmbd, dims: [d] }, { name: TENSORS.positionEmbd, dims: [d, T] });
  for (let l = 0; l < c.nLayer; l++) {
    const b = blockNames(l);
    layerNorm(b.attnNorm);
    for (const m of [b.attnQ, b.attnK, b.attnV, b.attnOutput]) linear(m, d, d);
    layerNorm(b.ffnNorm);
    linear(b.ffnUp, d, F);
    linear(b.ffnDown, F, d);
  }
  layerNorm(TENSORS.outputNorm);
  linear(TENSORS.output, d, c.nClasses);
  return specs;
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
  const weights = new ModelWeights(file);
  weights.check(vitTensors(config));
  const ropes = new RopeTables(weights);
  const { classes, normalization } = vitLabelsOf(file, config);
  const size = config.channels * config.height * config.width, T = patchCount(config) + 1;
  return {
    file, device, config, classes, normalization,
    forward(pixels, B) {
      if (pixels.length !== B * size) throw new RangeError(`vit: ${B} images of ${config.channels}×${config.height}×${config.width} need ${B * size} values, got ${pixels.length}`);
      // Image b is one sequence of T rows, seen whole: no KV cache.
      const segments: Segment[] = Array.from({ length: B }, (_, b) => ({ cache: null, start: b * T, length: T, pos0: 0 }));
      const ops = new InferenceOps(weights, ropes, device, segments, new Int32Array(B * T).map((_, i) => i % T));
      return vitForward(ops, config, ops.input(patchify(pixels, B, config), [B * patchCount(config), patchSize(config)]), B);
    },
  };
}
