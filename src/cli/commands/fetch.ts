// toy fetch: download a GGUF file from the Hugging Face hub into ./data (or --dir), resumably
// and verified; with no FILE, the repo's file list picks a sensible one.

import { Command } from "commander";
import { UsageError } from "../../errors.js";
import { hubEndpoint, hubToken, repoFiles } from "../../io/hub/client.js";
import { downloadFile } from "../../io/hub/download.js";
import { pickGGUF } from "../../io/hub/pick.js";
import { int, printJson } from "../common.js";
import { progressBar } from "../progress.js";

interface FetchFlags {
  revision: string;
  dir: string;
  retries: number;
  json?: boolean;
}

export function fetchCommand(): Command {
  return new Command("fetch")
    .description("download a file from the Hugging Face hub ($HF_ENDPOINT, $HF_TOKEN honoured), resuming partial downloads and verifying size and sha256; prints the file's path")
    .argument("<repo>", "the model repo, e.g. HuggingFaceTB/SmolLM2-135M-Instruct-GGUF")
    .argument("[file]", "the file in the repo (default: a Q4_K_M or Q8_0 .gguf file chosen from the repo's file list)")
    .option("--revision <rev>", "branch, tag or commit", "main")
    .option("--dir <dir>", "the folder to download into", "./data")
    .option("--retries <n>", "how many times to resume after the connection drops", int("--retries", 0), 3)
    .option("--json", "print {repo, file, revision, commit, path, size_bytes, sha256, verified, resumed_from, already_present}")
    .action(async (repo: string, file: string | undefined, flags: FetchFlags) => {
      if (!/^[^/\s]+(\/[^/\s]+)?$/.test(repo)) throw new UsageError(`${repo}: expected a repo as ORG/NAME`);
      if (["1", "true", "yes", "on"].includes((process.env.HF_HUB_OFFLINE ?? "").toLowerCase())) throw new UsageError("HF_HUB_OFFLINE is set: toy fetch needs the hub");
      const log = (m: string) => { if (!flags.json) process.stderr.write(`toy fetch: ${m}\n`); };
      const endpoint = hubEndpoint();
      const token = hubToken();
      if (file === undefined) {
        const files = await repoFiles({ endpoint, token, repo, revision: flags.revision });
        const pick = pickGGUF(files);
        if (pick.file === undefined) {
          const list = pick.candidates.length > 0 ? pick.candidates : files;
          throw new UsageError(`${repo}: ${pick.candidates.length > 0 ? "no default among its GGUF files" : "no GGUF file in it"}; name one of:\n  ${list.join("\n  ") || "(the repo is empty)"}`);
        }
        file = pick.file;
        if (pick.candidates.length > 1) log(`fetching ${file} (of ${pick.candidates.length} GGUF files: ${pick.candidates.join(", ")}; name another as FILE)`);
      }
      const bar = flags.json ? undefined : progressBar("MB");
      let result;
      try {
        result = await downloadFile({
          repo, file, revision: flags.revision, dir: flags.dir, endpoint, token, retries: flags.retries, log,
          onProgress: bar && ((done, total) => bar.update(Math.round(done / 1e5) / 10, Math.round((total ?? done) / 1e5) / 10)),
        });
      } finally {
        bar?.done();
      }
      if (flags.json) printJson(result);
      else process.stdout.write(`${result.path}\n`);
    });
}
