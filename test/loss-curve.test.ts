// Loss-curve pictures: one run (a bundle's loss.svg) and several runs on shared axes.

import { test } from "node:test";
import assert from "node:assert/strict";
import { lossCurveSvg, lossCurvesSvg } from "../src/io/runs/lossCurve.js";

const steps = (f: (s: number) => number, n = 20) => Array.from({ length: n }, (_, i) => ({ step: i + 1, loss: f(i + 1) }));

test("lossCurvesSvg: one group per run, its own colour, a legend entry for each curve", () => {
  const svg = lossCurvesSvg([
    { label: "lr 3e-3", train: steps((s) => 5 / s), validation: [{ step: 0, loss: 5.5 }, { step: 20, loss: 0.3 }] },
    { label: "lr <3e-4> & \"more\"", train: steps((s) => 5 - s / 10) },
  ], "two runs");
  const groups = [...svg.matchAll(/<g class="series" data-label="([^"]*)">([\s\S]*?)<\/g>/g)];
  assert.deepEqual(groups.map((g) => g[1]), ["lr 3e-3", "lr &lt;3e-4&gt; &amp; &quot;more&quot;"]);
  assert.equal((groups[0][2].match(/<path /g) ?? []).length, 3);     // steps, running mean, validation
  assert.equal((groups[0][2].match(/<circle /g) ?? []).length, 2);
  assert.equal((groups[1][2].match(/<path /g) ?? []).length, 2);     // no validation
  assert.notEqual(/stroke="(#[0-9a-f]{6})"/.exec(groups[0][2])![1], /stroke="(#[0-9a-f]{6})"/.exec(groups[1][2])![1]);
  const legend = [...svg.matchAll(/<text x="26" y="\d+">([^<]*)<\/text>/g)].map((m) => m[1]);
  assert.deepEqual(legend, ["lr 3e-3", "lr 3e-3 validation", "lr &lt;3e-4&gt; &amp; &quot;more&quot;"]);
  // Shared axes: the x axis reaches the longest run, the y axis covers every loss.
  assert.match(svg, />20<\/text>/);
  assert.match(svg, /^<svg[\s\S]*<\/svg>\n$/);
});

test("lossCurveSvg: a run bundle's picture is one series, train (smoothed) and validation", () => {
  const svg = lossCurveSvg(steps((s) => 4 / s), [{ step: 10, loss: 0.5 }], "run");
  assert.equal((svg.match(/<g class="series"/g) ?? []).length, 1);
  assert.deepEqual([...svg.matchAll(/<text x="26" y="\d+">([^<]*)<\/text>/g)].map((m) => m[1]), ["train (smoothed)", "validation"]);
  assert.match(svg, /stroke="#e6550d" stroke-width="2" stroke-dasharray="5,3"/);
});
