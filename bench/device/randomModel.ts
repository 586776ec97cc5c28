// A model of a real checkpoint's shape with random weights, for measuring speed where the
// checkpoint itself cannot travel (a lent GPU machine takes at most 64 MiB of files; SmolLM2 in
// F16 is 270 MB). Speed depends on the shapes and storage types, not on the values.
//   node dist/bench/device/randomModel.js skeleton SRC.gguf OUT.gguf   (here: metadata only)
//   node dist/bench/device/randomModel.js fill SKELETON.gguf OUT.gguf [TYPE]  (there: an F16
//   model, or TYPE: the matrices in another storage type, by toy's own quantizer)
// The skeleton keeps every metadata entry of SRC (architecture, hyperparameters, tokenizer) and
// lists its tensors' names and shapes under `toy.random_model.tensors`; `fill` writes the same
// tensors with N(0, 0.02²) values (vectors, the norms' gains, as 1 ± 0.02) in F16 (vectors in
// F32, as llama.cpp's converters store them). llama-quantize then makes the other types, or
// toy's quantizer does where no llama.cpp is built.

import { Rng } from "../../src/data/rng.js";
import { GGUFValueType, readGGUFHeader } from "../../src/io/gguf/reader.js";
import { GGMLType } from "../../src/io/gguf/types.js";
import { writeGGUF, type GGUFTensorData } from "../../src/io/gguf/writer.js";
import { quantize } from "../../src/quant/index.js";

const TENSORS_KEY = "toy.random_model.tensors";
const [mode, src, out, typeName = "F16"] = process.argv.slice(2);
if ((mode !== "skeleton" && mode !== "fill") || !src || !out) {
  process.stderr.write("usage: randomModel.js skeleton SRC.gguf OUT.gguf | fill SKELETON.gguf OUT.gguf [TYPE]\n");
  process.exit(2);
}
const header = readGGUFHeader(src);
const metadata = new Map(header.metadata), types = new Map(header.metadataTypes);

if (mode === "skeleton") {
  metadata.set(TENSORS_KEY, header.tensors.map((t) => `${t.name} ${t.dims.join(",")}`));
  types.set(TENSORS_KEY, { type: GGUFValueType.ARRAY, itemType: GGUFValueType.STRING });
  writeGGUF(out, { metadata, metadataTypes: types, tensors: [] });
} else {
  const listed = metadata.get(TENSORS_KEY);
  if (!Array.isArray(listed)) throw new Error(`${src}: no ${TENSORS_KEY} (not a skeleton made by randomModel.js skeleton)`);
  metadata.delete(TENSORS_KEY);
  types.delete(TENSORS_KEY);
  metadata.set("general.name", `${String(metadata.get("general.name") ?? "model")} (random weights)`);
  const matrixType = (GGMLType as unknown as Record<string, number>)[typeName];
  if (matrixType === undefined) throw new Error(`unknown storage type ${typeName}`);
  metadata.delete("general.file_type"); // the file's mix is the tensors' own types now
  const rng = new Rng(1234);
  const tensors: GGUFTensorData[] = (listed as string[]).map((line) => {
    const [name, dimList] = line.split(" ");
    const dims = dimList.split(",").map(Number);
    const n = dims.reduce((a, b) => a * b, 1);
    const values = new Float32Array(n);
    const base = dims.length === 1 ? 1 : 0;
    for (let i = 0; i < n; i++) values[i] = base + 0.02 * rng.normal();
    const type = dims.length === 1 ? GGMLType.F32 : matrixType;
    return { name, dims, type, bytes: quantize(type, values, n / dims[0], dims[0]) };
  });
  writeGGUF(out, { metadata, metadataTypes: types, tensors });
}
