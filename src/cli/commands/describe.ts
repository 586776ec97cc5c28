// toy describe: a model as an algorithm card (Phuong & Hutter-style pseudocode), its
// configuration as JSON, or a card read back into the configuration it describes.

import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { Command } from "commander";
import { configOfHeader, readCard, renderCard, vitConfigOfHeader } from "../../card/index.js";
import { isVitCard, readVitCard, renderVitCard } from "../../card/vit.js";
import { UsageError } from "../../errors.js";
import { readGGUFHeader } from "../../io/gguf/reader.js";
import { printJson } from "../common.js";
import { resolveModelPath } from "../../io/discovery/modelNames.js";

interface DescribeFlags {
  parse?: string;
  json?: boolean;
}

export function describeCommand(): Command {
  return new Command("describe")
    .description("print a model as an algorithm card (pseudocode with its real shapes), or read a card back")
    .argument("[model]", "a GGUF model file (only its header is read)")
    .option("--parse <card>", "read an algorithm card file back into its configuration")
    .option("--json", "print the configuration as one JSON object (what the model is built from)")
    .addHelpText("after", "\nExamples:\n  toy describe model.gguf > card.txt\n  toy describe --parse card.txt --json   # the same bytes as: toy describe model.gguf --json")
    .action((modelSpec: string | undefined, flags: DescribeFlags) => {
      if ((modelSpec === undefined) === (flags.parse === undefined)) throw new UsageError("give exactly one of MODEL or --parse CARD");
      if (flags.parse !== undefined) {
        let text: string;
        try { text = readFileSync(flags.parse, "utf8"); } catch (e) { throw new UsageError(`${flags.parse}: cannot read the card (${(e as NodeJS.ErrnoException).code ?? e})`); }
        if (isVitCard(text)) {
          const { config, meta } = readVitCard(text, flags.parse);
          if (flags.json) printJson(config);
          else process.stdout.write(renderVitCard(config, meta));
          return;
        }
        const { config, meta } = readCard(text, flags.parse);
        if (flags.json) printJson(config);
        else process.stdout.write(renderCard(config, meta));
        return;
      }
      const path = resolveModelPath(modelSpec!);
      const header = readGGUFHeader(path);
      const name = header.metadata.get("general.name");
      const meta = { name: typeof name === "string" && name.trim() !== "" ? name : basename(path), path };
      if (header.metadata.get("general.architecture") === "vit") {
        const config = vitConfigOfHeader(header, path);
        if (flags.json) printJson(config);
        else process.stdout.write(renderVitCard(config, meta));
        return;
      }
      const config = configOfHeader(header, path);
      if (flags.json) printJson(config);
      else process.stdout.write(renderCard(config, meta));
    });
}
