// From an adapter to the runtime: a device with the adapter's own storage limits, and a report
// of what was found. Shared by the Node adapter (adapter.ts, the `webgpu` package) and the
// browser's (browserAdapter.ts, navigator.gpu); nothing here needs Node.

/// <reference types="@webgpu/types" />

import { GpuRuntime } from "./runtime.js";

export interface AdapterReport {
  /** What the adapter calls itself ("OpenGL ES 3.2 Mesa 22.3.6", a GPU's name). */
  name: string;
  /** Which Dawn backend and feature level it was found with. */
  via: string;
  limits: {
    maxStorageBufferBindingSize: number;
    maxBufferSize: number;
    maxStorageBuffersPerShaderStage: number;
    maxComputeWorkgroupStorageSize: number;
    maxComputeWorkgroupsPerDimension: number;
  };
  features: string[];
}

/**
 * A device on `adapter` (found `via` some backend), as a GpuRuntime, or `{ error }` when the
 * adapter refuses one. `instance`: the GPU object the adapter came from, kept alive with it.
 */
export async function runtimeFor(adapter: GPUAdapter, via: string, instance?: GPU): Promise<GpuRuntime | { error: string }> {
  const a = adapter.limits;
  // Ask for the adapter's own storage limits (the defaults are lower), nothing else.
  const requiredLimits = {
    maxStorageBufferBindingSize: a.maxStorageBufferBindingSize,
    maxBufferSize: a.maxBufferSize,
    maxComputeWorkgroupStorageSize: a.maxComputeWorkgroupStorageSize,
  };
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredLimits });
  } catch (e) {
    return { error: `the WebGPU adapter refused a device: ${(e as Error).message}` };
  }
  const info = adapter.info;
  const name = [info.description, info.vendor, info.architecture].filter((s) => s).join(" ") || "unnamed adapter";
  const d = device.limits;
  const report: AdapterReport = {
    name, via,
    limits: {
      maxStorageBufferBindingSize: d.maxStorageBufferBindingSize,
      maxBufferSize: d.maxBufferSize,
      maxStorageBuffersPerShaderStage: d.maxStorageBuffersPerShaderStage,
      maxComputeWorkgroupStorageSize: d.maxComputeWorkgroupStorageSize,
      maxComputeWorkgroupsPerDimension: d.maxComputeWorkgroupsPerDimension,
    },
    features: [...adapter.features].sort(),
  };
  // The instance must outlive the device: Dawn tears both down when the instance is collected.
  return new GpuRuntime(device, report, instance);
}
