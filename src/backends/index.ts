// Backend selection: which kernel set runs a tensor's operations.
// `cpu` (native, src/backends/cpu) is used when it built; `ts` is the fallback and the gate.

import { BackendError } from "../errors.js";
import { setFileMapper } from "../io/gguf/fileMapper.js";
import { loadCpuBackend } from "./cpu/index.js";
import type { Device, Kernels } from "./kernels.js";
import { tsKernels } from "./ts/index.js";
import { openWebGpu } from "./webgpu/adapter.js";
import type { GpuRuntime } from "./webgpu/runtime.js";

export type { Device, Kernels } from "./kernels.js";
export { tsKernels };

type CpuState = ReturnType<typeof loadCpuBackend>;
let cpuState: CpuState | undefined;

/** The native cpu backend, loaded on first use; `{ error }` says why it is unavailable. */
export function cpuBackend(): CpuState {
  cpuState ??= loadCpuBackend();
  return cpuState;
}

export function kernelsFor(device: Device): Kernels {
  if (device === "ts") return tsKernels;
  if (device === "cpu") {
    const cpu = cpuBackend();
    if ("error" in cpu) throw new BackendError(`the cpu backend is not available: ${cpu.error}`);
    return cpu.kernels;
  }
  if (device === "webgpu") throw new BackendError("the webgpu backend runs whole forwards on the GPU (archs/gpuModel.ts), not host kernels");
  throw new BackendError(`backend ${device} is not available in this build`);
}

let gpu: GpuRuntime | undefined;

/**
 * Open the backend a run asked for, where that takes asynchronous work: webgpu finds its
 * adapter and device here (a BackendError, exit 4, says why when there is none). Call it before
 * loading a model for that backend; the others need nothing.
 */
export async function prepareBackend(device: string | undefined): Promise<void> {
  if (device !== "webgpu" || gpu) return;
  const opened = await openWebGpu();
  if ("error" in opened) throw new BackendError(`the webgpu backend is not available: ${opened.error}`);
  gpu = opened;
}

/** The opened WebGPU device (after `await prepareBackend("webgpu")`). */
export function webgpuRuntime(): GpuRuntime {
  if (!gpu) {
    throw new BackendError('the webgpu backend is not open here: the toy commands infer, eval, serve and train run on webgpu; a program calls await prepareBackend("webgpu") before loading a model');
  }
  return gpu;
}

let warned = false;

/**
 * Pick the backend for a run: the one asked for (an error, exit 4, when it is missing), else
 * `cpu` when it built, else `ts` with one warning. Also installs the cpu backend's memory-mapper.
 */
export function selectBackend(requested?: string, opts: { threads?: number; quiet?: boolean } = {}): Device {
  if (requested !== undefined && requested !== "ts" && requested !== "cpu" && requested !== "cuda" && requested !== "webgpu") {
    throw new BackendError(`unknown backend "${requested}" (expected ts, cpu or webgpu)`);
  }
  if (requested === "ts") return "ts";
  if (requested === "webgpu") {
    webgpuRuntime(); // opened by prepareBackend, else a clear error
    return "webgpu";
  }
  if (requested === "cuda") throw new BackendError("the cuda backend is not part of this build (no CUDA kernels yet)");
  const cpu = cpuBackend();
  if ("error" in cpu) {
    if (requested) throw new BackendError(`the ${requested} backend is not available: ${cpu.error}`);
    if (!warned && !opts.quiet) console.error(`toy: native cpu backend unavailable (${cpu.error}); using the ts backend`);
    warned = true;
    return "ts";
  }
  if (opts.threads !== undefined) cpu.setThreads(opts.threads);
  setFileMapper(cpu.mapFile);
  return "cpu";
}
