// toy against llama-bench on SmolLM2-135M copies, interleaved run by run, each run in its own
// process under `flock /work/.measure.lock`:
//   node scripts/vs-llama.mjs [--threads 1,2] [--types Q8_0,F16] [--reps 3] [--pp 128] [--tg 64]
// Models: /work/peers/models/SmolLM2-135M-Instruct.TYPE.gguf. Prints toy/llama ratios (medians).
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const threadsList = arg("--threads", "1,2").split(",").map(Number);
const types = arg("--types", "F32,F16,BF16,Q8_0,Q4_0,Q4_1,Q4_K_M,Q5_K_M,Q6_K").split(",");
const reps = Number(arg("--reps", "3")), pp = Number(arg("--pp", "128")), tg = Number(arg("--tg", "64"));
const bench = "/work/peers/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-bench";
const model = (t) => `/work/peers/models/SmolLM2-135M-Instruct.${t}.gguf`;
const locked = (cmd, args) => spawnSync("flock", ["/work/.measure.lock", cmd, ...args], { encoding: "utf8", maxBuffer: 16 << 20 });

function toy(t, threads) {
  const r = locked(process.execPath, ["dist/bench/toyRun.js", model(t), String(threads), String(pp), String(tg)]);
  if (r.status !== 0) throw new Error(r.stderr);
  const j = JSON.parse(r.stdout.trim().split("\n").pop());
  return { pp: j.pp_tps, tg: j.tg_tps, rss: j.rss_mb };
}
function llama(t, threads) {
  const r = locked(bench, ["-m", model(t), "-t", String(threads), "-p", String(pp), "-n", String(tg), "-r", "1", "-o", "json"]);
  if (r.status !== 0) throw new Error(r.stderr);
  const rows = JSON.parse(r.stdout);
  const get = (p, n) => rows.find((x) => x.n_prompt === p && x.n_gen === n).avg_ts;
  return { pp: get(pp, 0), tg: get(0, tg) };
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`load ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
for (const threads of threadsList)
  for (const t of types) {
    const rp = [], rt = [], tp = [], lp = [], tt = [], lt = [];
    for (let i = 0; i < reps; i++) {
      const a = toy(t, threads), b = llama(t, threads);
      rp.push(a.pp / b.pp); rt.push(a.tg / b.tg); tp.push(a.pp); lp.push(b.pp); tt.push(a.tg); lt.push(b.tg);
    }
    console.log(`${threads}t ${t.padEnd(7)} pp${pp} ${med(rp).toFixed(2)} (${med(tp).toFixed(0)}/${med(lp).toFixed(0)} t/s)  tg${tg} ${med(rt).toFixed(2)} (${med(tt).toFixed(0)}/${med(lt).toFixed(0)} t/s)  ratios pp ${rp.map((x) => x.toFixed(2)).join(",")} tg ${rt.map((x) => x.toFixed(2)).join(",")}`);
  }
console.log(`load ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
