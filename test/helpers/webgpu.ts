// The WebGPU device for the webgpu tests, or the reason there is none (the optional package is
// not installed, or no adapter: without a GPU, Mesa's llvmpipe needs libegl1 libgles2
// libegl-mesa0 libgl1-mesa-dri). Tests skip visibly with that reason.

import { prepareBackend, webgpuRuntime } from "../../src/backends/index.js";
import type { GpuRuntime } from "../../src/backends/webgpu/runtime.js";

export async function webgpu(): Promise<{ rt: GpuRuntime; skip: false } | { rt: null; skip: string }> {
  try {
    await prepareBackend("webgpu");
    return { rt: webgpuRuntime(), skip: false };
  } catch (e) {
    const skip = `SKIPPED: ${(e as Error).message}`;
    console.warn(skip);
    return { rt: null, skip };
  }
}
