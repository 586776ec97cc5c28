// Writes assets/corpus/stories.txt: the default corpus of `toy train from-scratch`. Short,
// simple stories assembled from a small grammar with a fixed seed (original text, the same
// bytes on every run), so a tiny byte-level model can learn words and sentences in minutes.
// Run: node scripts/make-corpus.mjs [bytes]   (default about 300 KB)

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const target = Number(process.argv[2] ?? 300_000);
const out = join(dirname(fileURLToPath(import.meta.url)), "..", "assets", "corpus", "stories.txt");

// mulberry32 with a fixed seed: the corpus never changes unless this file does.
let state = 20240601;
const rand = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const names = ["Tom", "Lily", "Ben", "Mia", "Sam", "Anna", "Max", "Lucy", "Tim", "Sara", "Jack", "Emma", "Leo", "Zoe", "Finn", "Ruby"];
const animals = ["cat", "dog", "bird", "fox", "rabbit", "bear", "duck", "frog", "mouse", "owl", "fish", "horse"];
const traits = ["little", "happy", "small", "brave", "kind", "curious", "shy", "funny", "sleepy", "clever", "big", "gentle"];
const places = ["the park", "the garden", "the forest", "the beach", "the farm", "the town", "the hill", "the river", "the school", "the yard"];
const things = ["ball", "kite", "box", "hat", "book", "cake", "flower", "stone", "boat", "toy", "apple", "drum", "shell", "leaf", "cup", "key"];
const colors = ["red", "blue", "green", "yellow", "big", "shiny", "soft", "old", "new", "pretty"];
const verbs = ["play", "run", "jump", "sing", "dance", "swim", "read", "draw", "look around", "walk"];
const feelings = ["happy", "sad", "scared", "excited", "tired", "proud", "surprised", "angry", "calm", "glad"];
const weather = ["The sun was warm.", "It was a sunny day.", "The sky was blue.", "It was raining.", "The wind was cold.", "It was a quiet morning.", "The stars were bright."];
const friends = ["mom", "dad", "friend", "sister", "brother", "grandma", "teacher"];
const cap = (s) => s[0].toUpperCase() + s.slice(1);

function hero() {
  return rand() < 0.5
    ? { name: pick(names), kind: "girl or boy", intro: (n) => `there was a ${pick(traits)} child named ${n}` }
    : { name: pick(names), kind: pick(animals), intro: (n, k) => `there was a ${pick(traits)} ${k} named ${n}` };
}

function story() {
  const h = hero(), n = h.name, k = h.kind;
  const friend = pick(friends.filter((f) => f !== "friend").concat(["friend"]));
  const thing = pick(things), color = pick(colors), place = pick(places), verb = pick(verbs);
  const lines = [];
  lines.push(`${pick(["Once upon a time", "One day", "Long ago", "One morning"])}, ${h.intro(n, k)}.`);
  lines.push(`${n} liked to ${verb} in ${place}.`);
  if (rand() < 0.6) lines.push(pick(weather));
  lines.push(`One day, ${n} found a ${color} ${thing} in ${place}.`);
  lines.push(pick([
    `"What is this?" ${n} asked.`,
    `${n} said, "Look at this ${thing}!"`,
    `${n} was very ${pick(feelings)}.`,
    `${n} picked up the ${thing} and smiled.`,
  ]));
  const turn = rand();
  if (turn < 0.35) {
    lines.push(`But then the ${thing} fell into ${pick(["the water", "a hole", "the mud", "a tree"])}.`);
    lines.push(`${n} felt ${pick(["sad", "scared", "worried"])}. ${n} did not know what to do.`);
    lines.push(`${cap(pick(["a kind", "a big", "an old", "a little"]))} ${pick(animals)} came and said, "I can help you."`);
    lines.push(`Together they got the ${thing} back. ${n} said, "Thank you!"`);
    lines.push(`From that day on, they were good friends.`);
  } else if (turn < 0.7) {
    lines.push(`${n} ran to ${pick(["mom", "dad", "grandma", "the teacher"])} and said, "Can I keep the ${thing}?"`);
    lines.push(pick([`"Yes, you can," was the answer, "but you must share it."`, `"Let us ask who lost it first," came the answer.`]));
    lines.push(`${n} shared the ${thing} with a ${friend}. They played all day.`);
    lines.push(`${n} learned that sharing makes everyone ${pick(["happy", "glad"])}.`);
  } else {
    lines.push(`${n} wanted to show the ${thing} to a ${friend}.`);
    const lost = pick(animals), mood = pick(["sad", "scared", "tired", "worried"]);
    lines.push(`On the way, ${n} saw a ${pick(traits)} ${lost} who was ${mood}.`);
    lines.push(`"Why are you ${mood}?" ${n} asked. "I am lost," said the ${lost}.`);
    lines.push(`${n} helped it find its home. It was a good day.`);
    lines.push(`At night, ${n} went to bed and dreamed about the ${color} ${thing}.`);
  }
  lines.push("The end.");
  return lines.join(" ");
}

const parts = [];
let size = 0;
while (size < target) {
  const s = story();
  parts.push(s);
  size += s.length + 2;
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, parts.join("\n\n") + "\n");
console.log(`${out}: ${parts.length} stories, ${size} bytes`);
