// The activation workspace: arrays of one forward are handed out again in the next (and a
// layer's in the next layer), zeroed, except the result the caller keeps.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor } from "../src/tensor/tensor.js";
import { Workspace } from "../src/tensor/workspace.js";

/** A stand-in forward: two intermediates and a result, all through Tensor.zeros. */
function forward(fill: number) {
  const h = Tensor.zeros([2, 3]), g = Tensor.zeros([3]), y = Tensor.zeros([2, 3]);
  h.data.fill(fill); g.data.fill(fill);
  y.data.fill(fill + 0.5);
  return { h: h.data, g: g.data, y };
}

test("a workspace reuses a run's arrays in the next run, zero-filled, but never the result", () => {
  const ws = new Workspace();
  const a = ws.run(() => forward(1), (r) => r.y.data);
  let seen: Float32Array[] = [];
  const b = ws.run(() => {
    const h = Tensor.zeros([2, 3]).data, g = Tensor.zeros([3]).data, y = Tensor.zeros([2, 3]).data;
    seen = [h, g, y];
    assert.deepEqual([...h, ...g], new Array(9).fill(0), "reused arrays start as zeros");
    return { y };
  }, (r) => r.y);
  assert.ok(seen[0] === a.h && seen[1] === a.g, "the intermediates are the previous run's arrays");
  assert.ok(seen[2] !== a.y.data, "the kept result is not handed out again");
  assert.deepEqual([...a.y.data], new Array(6).fill(1.5), "the earlier result is intact");
  assert.ok(b.y === seen[2]);
});

test("an output tensor reuses an array as it was left (its kernel writes every value); outside a run it is new", () => {
  const ws = new Workspace();
  const x = Tensor.zeros([2, 3]);
  const a = ws.run(() => forward(1), (r) => r.y.data);
  ws.run(() => {
    const h = x.output([2, 3]).data;
    assert.ok(h === a.h, "the previous run's array");
    assert.deepEqual([...h], new Array(6).fill(1), "not zero-filled");
    return { y: Tensor.zeros([2, 3]) };
  }, (r) => r.y.data);
  assert.deepEqual([...x.output([2, 3]).data], new Array(6).fill(0), "outside a run: a new array");
});

test("outside a run, and after a run that threw, Tensor.zeros gives fresh arrays", () => {
  const ws = new Workspace();
  const a = ws.run(() => forward(1), (r) => r.y.data);
  assert.notEqual(Tensor.zeros([2, 3]).data, a.h);
  assert.throws(() => ws.run(() => { Tensor.zeros([3]); throw new Error("boom"); }, () => new Float32Array(0)), /boom/);
  assert.notEqual(Tensor.zeros([3]).data, a.g);
  const c = ws.run(() => forward(2), (r) => r.y.data);
  assert.deepEqual([...c.y.data], new Array(6).fill(2.5));
});

test("after release, the next run starts with new arrays", () => {
  const ws = new Workspace();
  const a = ws.run(() => forward(1), (r) => r.y.data);
  ws.release();
  const b = ws.run(() => forward(2), (r) => r.y.data);
  assert.ok(b.h !== a.h && b.g !== a.g);
});

test("another shape in the next run gets new arrays of its own length", () => {
  const ws = new Workspace();
  ws.run(() => forward(1), (r) => r.y.data);
  const z = ws.run(() => Tensor.zeros([4, 5]), (r) => r.data);
  assert.equal(z.data.length, 20);
});

test("inside a run, a scope's arrays but its result are handed out again after it (the next layer's)", () => {
  const ws = new Workspace();
  let layer1: { h: Float32Array; g: Float32Array; y: Tensor } | undefined;
  ws.run(() => {
    const x0 = ws.scope(() => (layer1 = forward(1)).y, (y) => y.data);
    const layer2 = ws.scope(() => forward(2), (r) => r.y.data);
    assert.ok(layer2.h === layer1!.h && layer2.g === layer1!.g, "layer 2 takes layer 1's intermediates");
    assert.ok(layer2.y.data !== x0.data, "layer 1's result is still the caller's");
    assert.deepEqual([...x0.data], new Array(6).fill(1.5));
    return layer2.y;
  }, (y) => y.data);
});

test("only the latest run's arrays stay for the next one", () => {
  const ws = new Workspace();
  const a = ws.run(() => forward(1), (r) => r.y.data);
  ws.run(() => Tensor.zeros([4, 5]), (r) => r.data); // needs none of a's arrays: they are let go
  const c = ws.run(() => forward(2), (r) => r.y.data);
  assert.ok(c.h !== a.h && c.g !== a.g);
});

test("a scope given its input frees that array too, even one taken before an enclosing scope", () => {
  const ws = new Workspace();
  ws.run(() => {
    const x0 = Tensor.zeros([2, 3]).data.fill(3);                    // taken before both scopes
    let h: Float32Array | undefined, y2: Float32Array | undefined;
    const y1 = ws.scope(() => {
      h = Tensor.zeros([2, 3]).data;
      y2 = ws.scope(() => Tensor.zeros([2, 3]).data.fill(7), (y) => y, x0); // x0 is free after it
      assert.deepEqual([...y2], new Array(6).fill(7));
      const y = Tensor.zeros([2, 3]).data;
      assert.ok(y === x0, "the next array of that length is x0's, zero-filled");
      assert.deepEqual([...y], new Array(6).fill(0));
      return y.fill(1);
    }, (y) => y);
    // The enclosing scope gave back everything it took but its result: h and the inner result.
    const a = Tensor.zeros([2, 3]).data, b = Tensor.zeros([2, 3]).data;
    assert.ok((a === h && b === y2) || (a === y2 && b === h), "h and the inner result are handed out again");
    assert.deepEqual([...y1], new Array(6).fill(1), "the result is not handed out again");
    return y1;
  }, (y) => y);
});
