// toy install: build (or rebuild) the native cpu backend, check every kernel against the ts
// backend, and say which backends and SIMD paths are active. Exit 4 when no native backend works.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { cpuBackend, tsKernels } from "../../backends/index.js";
import { ADDON_PATH, selfTest } from "../../backends/cpu/index.js";
import type { SelfTestResult } from "../../backends/cpu/selftest.js";
import { openWebGpu } from "../../backends/webgpu/adapter.js";
import { webgpuSelfTest } from "../../backends/webgpu/selftest.js";
import { BackendError } from "../../errors.js";
import { printJson } from "../common.js";

interface InstallFlags {
  rebuild?: boolean;
  json?: boolean;
}

const BUILD_SCRIPT = fileURLToPath(new URL("../../../../scripts/build-native.mjs", import.meta.url));

export function installCommand(): Command {
  return new Command("install")
    .description("build and verify the native cpu backend, look for a WebGPU adapter; print which backends and SIMD paths are active")
    .option("--rebuild", "rebuild the native addon even when it is already built")
    .option("--json", 'print {"backends": [...], "selftest": [...], "webgpu_selftest": [...]}')
    .action((flags: InstallFlags) => runInstall(flags));
}

async function runInstall(flags: InstallFlags): Promise<void> {
  const log = (s: string) => { if (!flags.json) process.stdout.write(s + "\n"); };
  if (flags.rebuild || !existsSync(ADDON_PATH)) {
    log("building the native cpu backend (node-gyp) ...");
    const r = spawnSync(process.execPath, [BUILD_SCRIPT], { stdio: flags.json ? "ignore" : ["ignore", "inherit", "inherit"], env: { ...process.env, TOY_NATIVE_VERBOSE: flags.json ? "" : process.env.TOY_NATIVE_VERBOSE ?? "" } });
    if (r.status !== 0) log(`build script exited with ${r.status}`);
  }
  const cpu = cpuBackend();
  const backends = [
    { name: "ts", available: true, detail: "pure TypeScript reference" },
    "error" in cpu
      ? { name: "cpu", available: false, detail: cpu.error }
      : { name: "cpu", available: true, detail: `${cpu.info.simd}${cpu.info.bf16 ? " + bf16" : ""}, ${cpu.info.threads} threads` },
    { name: "cuda", available: false, detail: "not part of this build" },
  ];
  // webgpu is optional: a missing package or adapter is reported, not an error.
  const gpu = await openWebGpu();
  backends.push("error" in gpu
    ? { name: "webgpu", available: false, detail: gpu.error }
    : { name: "webgpu", available: true, detail: `${gpu.report.name} (${gpu.report.via}); limits ${JSON.stringify(gpu.report.limits)}` });
  const results = "error" in cpu ? [] : selfTest(cpu.kernels, tsKernels, { bf16Activations: cpu.info.bf16 });
  const gpuResults = "error" in gpu ? [] : await webgpuSelfTest(gpu, tsKernels);
  if (flags.json) {
    printJson({ backends, selftest: results, webgpu_selftest: gpuResults });
  } else {
    for (const b of backends) log(`${b.available ? "✓" : "✗"} ${b.name.padEnd(6)} ${b.detail}`);
    const show = (title: string, rs: SelfTestResult[]) => {
      if (!rs.length) return;
      log(`\n${title}`);
      for (const r of rs) {
        log(`  ${r.ok ? "ok  " : "FAIL"} ${(r.kernel + (r.type ? ` ${r.type}` : "")).padEnd(16)} max error ${r.maxError.toExponential(2)} (tolerance ${r.tolerance.toExponential(0)})${r.error ? `: ${r.error}` : ""}`);
      }
    };
    show("self-test of the cpu kernels against ts:", results);
    show("self-test of the webgpu kernels against ts:", gpuResults);
  }
  const gpuFailed = gpuResults.filter((r) => !r.ok);
  if (gpuFailed.length) throw new BackendError(`the webgpu backend failed its self-test: ${gpuFailed.map((r) => r.kernel + (r.type ? ` ${r.type}` : "")).join(", ")}`);
  if ("error" in cpu) throw new BackendError(`no native backend: ${cpu.error}`);
  const failed = results.filter((r) => !r.ok);
  if (failed.length) throw new BackendError(`the cpu backend failed its self-test: ${failed.map((r) => r.kernel + (r.type ? ` ${r.type}` : "")).join(", ")}`);
}
