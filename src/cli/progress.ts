// A progress bar for long work (cli-progress), drawn only on a terminal (stderr), never into
// --json output.

import cliProgress from "cli-progress";

export interface Progress {
  update: (done: number, total: number) => void;
  done: () => void;
}

export function progressBar(unit: string, extra = ""): Progress | undefined {
  if (!process.stderr.isTTY) return undefined;
  const bar = new cliProgress.SingleBar(
    { format: `[{bar}] {value}/{total} ${unit}  {duration_formatted} elapsed, eta {eta_formatted}${extra}`, stream: process.stderr, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total, payload?: Record<string, unknown>) {
      if (!started) { bar.start(total, 0, payload); started = true; }
      bar.setTotal(total);
      bar.update(done, payload);
    },
    done() {
      if (started) bar.stop();
    },
  };
}
