// toy install: build (or rebuild) the native cpu backend, check every kernel against the ts
// backend, and say which backends and SIMD paths are active. Exit 4 when no native backend works.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { cpuBackend, tsKernels } from "../../backends/index.js";
import { ADDON_PATH, selfTest } from "../../backends/cpu/index.js";
import { BackendError } from "../../errors.js";
import { printJson } from "../common.js";

interface InstallFlags {
  rebuild?: boolean;
  json?: boolean;
}

const BUILD_SCRIPT = fileURLToPath(new URL("../../../../scripts/build-native.mjs", import.meta.url));

export function installCommand(): Command {
  return new Command("install")
    .description("build and verify the native cpu backend; print which backends and SIMD paths are active")
    .option("--rebuild", "rebuild the native addon even when it is already built")
    .option("--json", 'print {"backends": [...], "selftest": [...]}')
    .action((flags: InstallFlags) => runInstall(flags));
}

function runInstall(flags: InstallFlags): void {
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
      : { name: "cpu", available: true, detail: `${cpu.info.simd}, ${cpu.info.threads} threads` },
    { name: "cuda", available: false, detail: "not part of this build" },
  ];
  const results = "error" in cpu ? [] : selfTest(cpu.kernels, tsKernels);
  if (flags.json) {
    printJson({ backends, selftest: results });
  } else {
    for (const b of backends) log(`${b.available ? "✓" : "✗"} ${b.name.padEnd(5)} ${b.detail}`);
    if (results.length) {
      log("\nself-test of the cpu kernels against ts:");
      for (const r of results) {
        log(`  ${r.ok ? "ok  " : "FAIL"} ${(r.kernel + (r.type ? ` ${r.type}` : "")).padEnd(16)} max error ${r.maxError.toExponential(2)} (tolerance ${r.tolerance.toExponential(0)})${r.error ? `: ${r.error}` : ""}`);
      }
    }
  }
  if ("error" in cpu) throw new BackendError(`no native backend: ${cpu.error}`);
  const failed = results.filter((r) => !r.ok);
  if (failed.length) throw new BackendError(`the cpu backend failed its self-test: ${failed.map((r) => r.kernel + (r.type ? ` ${r.type}` : "")).join(", ")}`);
}
