// The storage types of ggml: how many values one block holds and how many bytes it takes.
// Ids and layouts are ggml's (ggml.h / ggml-common.h); a GGUF tensor names its type by id.

export enum GGMLType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
}

export interface TypeTraits {
  name: string;
  blockSize: number; // values per block
  typeSize: number; // bytes per block
}

/** QK_K: the super-block size of the K-quants. */
export const QK_K = 256;

export const TYPE_TRAITS: ReadonlyMap<number, TypeTraits> = new Map<number, TypeTraits>([
  [GGMLType.F32, { name: "F32", blockSize: 1, typeSize: 4 }],
  [GGMLType.F16, { name: "F16", blockSize: 1, typeSize: 2 }],
  [GGMLType.BF16, { name: "BF16", blockSize: 1, typeSize: 2 }],
  [GGMLType.Q4_0, { name: "Q4_0", blockSize: 32, typeSize: 2 + 16 }],
  [GGMLType.Q4_1, { name: "Q4_1", blockSize: 32, typeSize: 2 + 2 + 16 }],
  [GGMLType.Q5_0, { name: "Q5_0", blockSize: 32, typeSize: 2 + 4 + 16 }],
  [GGMLType.Q5_1, { name: "Q5_1", blockSize: 32, typeSize: 2 + 2 + 4 + 16 }],
  [GGMLType.Q8_0, { name: "Q8_0", blockSize: 32, typeSize: 2 + 32 }],
  [GGMLType.Q8_1, { name: "Q8_1", blockSize: 32, typeSize: 4 + 32 }],
  [GGMLType.Q2_K, { name: "Q2_K", blockSize: QK_K, typeSize: 16 + 64 + 2 + 2 }],
  [GGMLType.Q3_K, { name: "Q3_K", blockSize: QK_K, typeSize: 32 + 64 + 12 + 2 }],
  [GGMLType.Q4_K, { name: "Q4_K", blockSize: QK_K, typeSize: 2 + 2 + 12 + 128 }],
  [GGMLType.Q5_K, { name: "Q5_K", blockSize: QK_K, typeSize: 2 + 2 + 12 + 32 + 128 }],
  [GGMLType.Q6_K, { name: "Q6_K", blockSize: QK_K, typeSize: 128 + 64 + 16 + 2 }],
  [GGMLType.Q8_K, { name: "Q8_K", blockSize: QK_K, typeSize: 4 + 256 + 32 }],
  [GGMLType.IQ4_NL, { name: "IQ4_NL", blockSize: 32, typeSize: 2 + 16 }],
  [GGMLType.IQ4_XS, { name: "IQ4_XS", blockSize: QK_K, typeSize: 2 + 2 + 4 + 128 }],
]);

export function typeName(type: number): string {
  return TYPE_TRAITS.get(type)?.name ?? `type ${type}`;
}

export function typeByName(name: string): GGMLType | undefined {
  for (const [id, t] of TYPE_TRAITS) if (t.name === name.toUpperCase()) return id;
  return undefined;
}

/** Bytes taken by `count` values of `type` (count must be a multiple of the block size). */
export function byteSize(type: number, count: number): number {
  const t = TYPE_TRAITS.get(type);
  if (!t) throw new Error(`unknown ggml type ${type}`);
  return (count / t.blockSize) * t.typeSize;
}

/** The file-type names of `general.file_type` (llama_ftype). */
export const FILE_TYPE_NAMES: Record<number, string> = {
  0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
  10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
  16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 25: "IQ4_NL", 30: "IQ4_XS", 32: "BF16",
};
