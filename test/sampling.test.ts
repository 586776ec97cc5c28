// OpenAI's logit_bias and presence / frequency penalties (src/engines/sampling.ts adjustLogits),
// and sampling from logits where a constraint has set some to -Infinity.

import { test } from "node:test";
import assert from "node:assert/strict";
import { adjustLogits, DEFAULT_SAMPLING, Sampler } from "../src/engines/sampling.js";

test("adjustLogits: logit[t] + bias[t] − count[t]·frequency − (count[t] > 0)·presence, over generated tokens", () => {
  const logits = Float32Array.from([1, 2, 3, 4]);
  const o = { ...DEFAULT_SAMPLING, presencePenalty: 0.5, frequencyPenalty: 0.25, logitBias: new Map([[0, -100], [3, 1.5]]) };
  const out = adjustLogits(logits, o, [1, 1, 2, 1]);
  assert.deepEqual([...out], [1 - 100, 2 - 3 * 0.25 - 0.5, 3 - 0.25 - 0.5, 4 + 1.5]);
  assert.deepEqual([...logits], [1, 2, 3, 4], "the input is not changed");
  assert.equal(adjustLogits(logits, DEFAULT_SAMPLING, [1, 2]), logits, "nothing to apply: the same array");
  assert.equal(adjustLogits(logits, { ...DEFAULT_SAMPLING, presencePenalty: 1 }, []), logits, "no generated tokens yet");
});

test("sampling never picks a token whose logit is -Infinity, whatever the settings", () => {
  const logits = new Float32Array(1000).fill(-Infinity);
  for (const id of [3, 500, 999]) logits[id] = -50 + id / 100;
  for (const o of [{ topK: 0, topP: 1, minP: 0 }, { topK: 40, topP: 0.5, minP: 0.1 }, { topK: 2, topP: 1, minP: 0 }]) {
    for (let seed = 0; seed < 200; seed++) {
      const id = new Sampler({ ...DEFAULT_SAMPLING, ...o, temperature: 2, seed }).sample(logits);
      assert.ok([3, 500, 999].includes(id), `${JSON.stringify(o)} seed ${seed}: ${id}`);
    }
  }
});
