// Gemma 2's attention scale as llama.cpp reads it (src/models/gemma2.cpp): 1/√(d / H) for the 27B
// model (46 layers, where d / H = 144 ≠ the head size 128), 1/√d_h for the others, and the file's
// gemma2.attention.scale when it has one. Files with only metadata and the embedding: the config
// needs nothing else.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configOf } from "../src/archs/index.js";
import { GGUFValueType, readGGUF } from "../src/io/gguf/reader.js";
import { GGMLType } from "../src/io/gguf/types.js";
import { writeGGUF, type GGUFMetadataEntry } from "../src/io/gguf/writer.js";

const tmp = mkdtempSync(join(tmpdir(), "toy-gemma2-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/** A gemma2 header: d = 36, 2 heads of size 16 (so d / H = 18 ≠ 16, as on the 27B model). */
function gemma2File(nLayer: number, scale?: number) {
  const U32 = GGUFValueType.UINT32;
  const metadata: GGUFMetadataEntry[] = [
    ["general.architecture", "gemma2"],
    ["gemma2.block_count", nLayer, U32], ["gemma2.embedding_length", 36, U32], ["gemma2.feed_forward_length", 64, U32],
    ["gemma2.attention.head_count", 2, U32], ["gemma2.attention.head_count_kv", 1, U32],
    ["gemma2.attention.key_length", 16, U32], ["gemma2.attention.value_length", 16, U32],
    ["gemma2.context_length", 64, U32],
  ];
  if (scale !== undefined) metadata.push(["gemma2.attention.scale", scale, GGUFValueType.FLOAT32]);
  const path = join(tmp, `g${nLayer}-${scale ?? "none"}.gguf`);
  const embd = new Float32Array(36 * 10);
  writeGGUF(path, { metadata, tensors: [{ name: "token_embd.weight", dims: [36, 10], type: GGMLType.F32, bytes: new Uint8Array(embd.buffer) }] });
  return readGGUF(path);
}

test("gemma2: queries scaled by 1/√d_h, by 1/√(d / H) on the 27B model (46 layers), or by the file's scale", () => {
  assert.equal(configOf(gemma2File(26)).attention.scale, 1 / Math.sqrt(16), "2B/9B: the head size");
  assert.equal(configOf(gemma2File(46)).attention.scale, 1 / Math.sqrt(18), "27B: d / H");
  assert.ok(Math.abs(configOf(gemma2File(46, 0.125)).attention.scale - 0.125) < 1e-7, "the file's own key wins");
});
