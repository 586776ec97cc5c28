// Finding a WebGPU device in a web browser: `navigator.gpu` (Chrome, Edge, Safari, Firefox
// where enabled; only on a secure context, which http://localhost and http://127.0.0.1 are).
// The device and runtime are the same as in Node (device.ts).

/// <reference types="@webgpu/types" />

import { runtimeFor } from "./device.js";
import type { GpuRuntime } from "./runtime.js";

/** The page's WebGPU runtime, or `{ error }` saying why there is none (shown to the user). */
export async function openBrowserGpu(): Promise<GpuRuntime | { error: string }> {
  const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  if (!gpu) {
    const secure = (globalThis as { isSecureContext?: boolean }).isSecureContext;
    return { error: secure === false
      ? "WebGPU needs a secure context: open this page over https or from localhost"
      : "this browser has no WebGPU (navigator.gpu is missing); use a recent Chrome, Edge or Safari" };
  }
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    return { error: `the browser refused a WebGPU adapter: ${(e as Error).message}` };
  }
  if (!adapter) return { error: "the browser found no WebGPU adapter (is the GPU blocklisted, or hardware acceleration off?)" };
  return runtimeFor(adapter, "navigator.gpu", gpu);
}
