#!/bin/sh
# CPU time per token, toy (scripts/toy-cpu-run.mjs) against llama-bench (scripts/llama-cpu-run.sh),
# for each SmolLM2 copy in /work/peers/models; for a machine too busy for wall-clock ratios.
#   sh scripts/vs-llama-cpu.sh THREADS [TYPES...]
cd "$(dirname "$0")/.." || exit 1
th=${1:-1}; shift
types=${*:-F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K_M Q5_K_M Q6_K}
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $types; do
  M=/work/peers/models/SmolLM2-135M-Instruct.$t.gguf
  toy=$(flock /work/.measure.lock node scripts/toy-cpu-run.mjs "$M" "$th" 128 64)
  ltg=$(flock /work/.measure.lock sh scripts/llama-cpu-run.sh "$M" "$th" tg); lpp=$(flock /work/.measure.lock sh scripts/llama-cpu-run.sh "$M" "$th" pp)
  node -e '
    const [t, a, b, c] = process.argv.slice(1); const toy = JSON.parse(a), tg = JSON.parse(b), pp = JSON.parse(c);
    console.log(`${t.padEnd(7)} pp CPU ms/token toy ${toy.pp_cpu_ms_per_tok} llama ${pp.pp_cpu_ms_per_tok} → ${(pp.pp_cpu_ms_per_tok / toy.pp_cpu_ms_per_tok).toFixed(2)}×   tg toy ${toy.tg_cpu_ms_per_tok} llama ${tg.tg_cpu_ms_per_tok} → ${(tg.tg_cpu_ms_per_tok / toy.tg_cpu_ms_per_tok).toFixed(2)}×`);
  ' "$t" "$toy" "$ltg" "$lpp"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
