// Typed access to GGUF metadata, with errors that name the file and the key.

import { ModelFileError } from "../../errors.js";
import type { GGUFValue } from "./reader.js";

export class Metadata {
  constructor(readonly map: Map<string, GGUFValue>, readonly path: string) {}

  has(key: string): boolean {
    return this.map.has(key);
  }

  get(key: string): GGUFValue | undefined {
    return this.map.get(key);
  }

  private missing(key: string, what: string): never {
    throw new ModelFileError(`${this.path}: metadata ${key} is missing (expected ${what})`);
  }

  number(key: string, fallback?: number): number {
    const v = this.map.get(key);
    if (v === undefined) return fallback !== undefined ? fallback : this.missing(key, "a number");
    if (typeof v === "number") return v;
    if (typeof v === "bigint") return Number(v);
    throw new ModelFileError(`${this.path}: metadata ${key} is ${describe(v)}, expected a number`);
  }

  /** A non-negative whole number at most `max`. */
  count(key: string, fallback?: number, max = 1 << 30): number {
    const v = this.number(key, fallback);
    if (!Number.isInteger(v) || v < 0 || v > max) {
      throw new ModelFileError(`${this.path}: metadata ${key} is ${v}, expected a whole number from 0 to ${max}`);
    }
    return v;
  }

  string(key: string, fallback?: string): string {
    const v = this.map.get(key);
    if (v === undefined) return fallback !== undefined ? fallback : this.missing(key, "a string");
    if (typeof v === "string") return v;
    throw new ModelFileError(`${this.path}: metadata ${key} is ${describe(v)}, expected a string`);
  }

  bool(key: string, fallback?: boolean): boolean {
    const v = this.map.get(key);
    if (v === undefined) return fallback !== undefined ? fallback : this.missing(key, "a bool");
    if (typeof v === "boolean") return v;
    throw new ModelFileError(`${this.path}: metadata ${key} is ${describe(v)}, expected a bool`);
  }

  strings(key: string): string[] | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v as string[];
    throw new ModelFileError(`${this.path}: metadata ${key} is ${describe(v)}, expected an array of strings`);
  }

  numbers(key: string): ArrayLike<number> | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return v as unknown as ArrayLike<number>;
    if (Array.isArray(v) && v.every((s) => typeof s === "number")) return v as number[];
    throw new ModelFileError(`${this.path}: metadata ${key} is ${describe(v)}, expected an array of numbers`);
  }
}

function describe(v: GGUFValue): string {
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (ArrayBuffer.isView(v)) return `a numeric array of ${(v as Uint8Array).length}`;
  return `${typeof v} ${JSON.stringify(typeof v === "bigint" ? String(v) : v).slice(0, 40)}`;
}
