// The chat page at GET / in headless Chromium (Debian's `chromium`, driven by playwright-core):
// type a message, see the reply stream in, with its tokens per second.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { cpuBackend } from "../src/backends/index.js";
import { fixtures } from "./helpers/fixtures.js";
import { serve, type Served } from "./helpers/serve.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const fx = fixtures();
const noBrowser = existsSync(CHROMIUM) ? false : `SKIPPED: ${CHROMIUM} not found (apt-get install chromium) — the chat page is untested`;
if (noBrowser) console.warn(noBrowser);
const skip = fx.skip || noBrowser;

let served: Served | undefined;
let url = "";
let browser: BrowserContext | undefined;
let profile = "";

before(async () => {
  if (skip) return;
  const backend = "error" in cpuBackend() ? "ts" : "cpu";
  served = await serve(join(fx.dir, "models", "stories260K.gguf"), ["--backend", backend]);
  url = served.url;
  profile = mkdtempSync(join(tmpdir(), "toy-chromium-"));
  // A fresh profile (playwright passes it as --user-data-dir).
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  await served?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

test("the chat page streams a reply and shows tokens/s", { skip }, async () => {
  const page = await browser!.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url + "/");
  assert.match(await page.title(), /toy · stories260K/);
  await page.fill("#max", "40");
  await page.fill("#input", "Tell me a story");
  // Watch the answer grow: more than one distinct non-empty text before it is done.
  const seen = new Set<string>();
  const watch = page.exposeFunction("seen", (t: string) => { seen.add(t); });
  await watch;
  // (Runs in the page; a string, since this project is compiled without the DOM types.)
  await page.evaluate(`
    const log = document.getElementById("log");
    new MutationObserver(() => {
      const a = log.querySelector(".assistant");
      if (a && a.textContent) window.seen(a.textContent);
    }).observe(log, { subtree: true, childList: true, characterData: true });
  `);
  await page.press("#input", "Enter");
  await page.waitForSelector(".stats[data-done='1']", { timeout: 60_000 });
  const user = await page.textContent(".msg.user");
  const answer = await page.textContent(".msg.assistant");
  const stats = await page.textContent(".stats");
  assert.equal(user, "Tell me a story");
  assert.ok(answer && answer.length > 0, "an answer appeared");
  assert.match(answer!, /<t\d+>/, "stories260K's placeholder pieces");
  assert.match(stats!, /tokens\/s/);
  assert.match(stats!, /^\d+ tokens/);
  assert.ok(seen.size > 1, `the reply streamed in (${seen.size} updates)`);
  assert.deepEqual(errors, []);
  await page.close();
});
