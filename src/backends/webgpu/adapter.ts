// Finding a WebGPU device: the optional npm package `webgpu` (Dawn's Node binding), its adapter,
// and a device with the adapter's storage limits. Without a GPU, Dawn's OpenGL ES backend runs
// on Mesa's llvmpipe (a software rasterizer), which needs EGL_PLATFORM=surfaceless and the
// "compatibility" feature level; on a real GPU Dawn picks Vulkan, Metal or Direct3D 12 itself.

/// <reference types="@webgpu/types" />

import { runtimeFor } from "./device.js";
import type { GpuRuntime } from "./runtime.js";

export type { AdapterReport } from "./device.js";

/** The package's exports we use (it is optional: imported by name at run time, typed here). */
interface WebGpuPackage {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

async function importPackage(): Promise<WebGpuPackage | string> {
  const name = "webgpu"; // a variable: the compiler must not require the optional package
  try {
    return (await import(name)) as WebGpuPackage;
  } catch (e) {
    return `the optional npm package "webgpu" is not installed or does not load (${(e as Error).message.split("\n")[0]}); install it with npm i webgpu`;
  }
}

/** Ask Dawn for an adapter: first its default choice (a real GPU), then OpenGL ES (llvmpipe). */
async function findAdapter(pkg: WebGpuPackage): Promise<{ gpu: GPU; adapter: GPUAdapter; via: string } | string> {
  const tries: { flags: string[]; options: GPURequestAdapterOptions; via: string }[] = [
    { flags: [], options: {}, via: "default backend, core" },
    { flags: ["backend=opengles"], options: { featureLevel: "compatibility" }, via: "opengles, compatibility" },
  ];
  if (process.env.TOY_WEBGPU_BACKEND === "opengles") tries.shift();
  const failures: string[] = [];
  for (const t of tries) {
    try {
      const gpu = pkg.create(t.flags);
      const adapter = await gpu.requestAdapter(t.options);
      if (adapter) return { gpu, adapter, via: t.via };
      failures.push(`${t.via}: no adapter`);
    } catch (e) {
      failures.push(`${t.via}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  return `no WebGPU adapter found (${failures.join("; ")}); without a GPU, install Mesa (Debian: libegl1 libgles2 libegl-mesa0 libgl1-mesa-dri)`;
}

let opened: Promise<GpuRuntime | { error: string }> | undefined;

/** The process's WebGPU runtime, opened on first use; `{ error }` says why there is none. */
export function openWebGpu(): Promise<GpuRuntime | { error: string }> {
  opened ??= open();
  return opened;
}

async function open(): Promise<GpuRuntime | { error: string }> {
  // Mesa's EGL needs no display when told so; harmless where a GPU driver is used.
  process.env.EGL_PLATFORM ??= "surfaceless";
  const pkg = await importPackage();
  if (typeof pkg === "string") return { error: pkg };
  // Dawn's binding defines the GPU* constants (GPUBufferUsage, GPUMapMode) as globals.
  for (const [k, v] of Object.entries(pkg.globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  const found = await findAdapter(pkg);
  if (typeof found === "string") return { error: found };
  const { gpu, adapter, via } = found;
  return runtimeFor(adapter, via, gpu);
}
