#!/bin/sh
# llama-bench's CPU time per token (user + sys), by difference of two runs, for comparing with
# scripts/toy-cpu-run.mjs on a busy machine:  sh scripts/llama-cpu-run.sh MODEL THREADS pp|tg
B=/work/peers/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-bench
cpu() { /usr/bin/time -f "%U %S" "$B" -m "$1" -t "$2" $3 -r 1 -o json 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'; }
if [ "$3" = pp ]; then a=$(cpu "$1" "$2" "-p 32 -n 0"); b=$(cpu "$1" "$2" "-p 160 -n 0"); n=128
else a=$(cpu "$1" "$2" "-p 0 -n 16"); b=$(cpu "$1" "$2" "-p 0 -n 80"); n=64; fi
echo "$a $b $n" | awk '{printf "{\"%s_cpu_ms_per_tok\": %.3f}\n", "'"$3"'", ($2 - $1) * 1000 / $3}'
