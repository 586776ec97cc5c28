// The WebGPU device for the webgpu tests, or the reason there is none (the optional package is
// not installed, or no adapter: without a GPU, Mesa's llvmpipe needs libegl1 libgles2
// libegl-mesa0 libgl1-mesa-dri). Tests skip visibly with that reason.

import { prepareBackend, webgpuRuntime } from "../../src/backends/index.js";
import type { GpuRuntime } from "../../src/backends/webgpu/runtime.js";
import { trainKernelsFor } from "../../src/autograd/kernels/index.js";

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

/** Why the webgpu training kernels cannot run here (a visible SKIPPED message), or false. */
export function webgpuTrainSkip(): string | false {
  try {
    trainKernelsFor("webgpu");
    return false;
  } catch (e) {
    const skip = `SKIPPED: ${(e as Error).message}`;
    console.warn(skip);
    return skip;
  }
}
