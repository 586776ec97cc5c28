#!/bin/bash
# The prepared run for a lent NVIDIA GPU machine (the `device` tool; docs/performance.md, "GPU"):
# toy's webgpu backend (Dawn over Vulkan on the NVIDIA driver) next to llama.cpp built there with
# CUDA, on SmolLM2-135M-shaped models with random weights (bench/device/randomModel.ts: the real
# file is too big to travel; speed depends on shapes and storage types only). Everything the
# machine lacks travels in .device/ (bench/device/pack.sh) and the Vulkan loader in .gl/.
# Results land in $OUT: install.json (adapter + kernel self-test), eval-*.json (the same text
# scored on webgpu and on ts), bench.jsonl and bench.log, llama-build.log.
#   bench/device/gpu-run.sh setup   unpack, start the llama.cpp build (detached: it outlives the
#                                   call while the machine stays warm), toy's checks, the F16 model
#   bench/device/gpu-run.sh bench   (setup first if not done) wait for the build, quantize, bench
#                                   (MODELS="Q4_1 F16" TESTS="tg64 pp512" for fewer cells)
set -u
PHASE=${1:-bench}
OUT=${OUT:-/tmp/toy-device-out}; mkdir -p "$OUT"
LIMIT=${LIMIT:-540}                        # seconds this script may take in all
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(el)s] $*" | tee -a "$OUT/bench.log"; }
W=/tmp/toydev
NODE=$W/bin/node; APP=$W/app; TOY="$NODE $APP/dist/src/cli/main.js"
# The NVIDIA driver's Vulkan and EGL files, where the machine keeps them.
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json EGLV=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$ICD" ] && export VK_DRIVER_FILES=$ICD
[ -f "$EGLV" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$EGLV

setup() {
mkdir -p $W/m

[ -n "${DRY:-}" ] || { for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; }
nvcc --version | tail -1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python3 - "$W" <<'PY'
import sys, tarfile
w = sys.argv[1]
for name, dest in [("node", w + "/bin"), ("app", w + "/app"), ("llama.cpp", w + "/src")]:
    with tarfile.open(f".device/{name}.tar.xz") as t: t.extractall(dest)
PY
say "unpacked"
$NODE --version

# llama.cpp with CUDA for this GPU, in the background while toy checks itself; setsid: it goes
# on after this call returns, while the machine is warm.
setsid bash -c "cmake -S $W/src/llama.cpp -B $W/lb -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
  && cmake --build $W/lb --target llama-bench llama-quantize -j $(nproc); echo \$? > $W/build.rc" > $W/llama-build.log 2>&1 < /dev/null &

$TOY install --json > "$OUT/install.json" 2> "$OUT/install.err"; say "toy install exit $?"
$NODE $APP/dist/bench/device/randomModel.js fill .device/smol.skel.gguf $W/m/smol-random.F16.gguf && say "random F16 model made"
head -c 3000 README.md > $W/text.txt
for b in webgpu ts; do
  $TOY eval $W/m/smol-random.F16.gguf --file $W/text.txt --max-tokens 64 --backend $b --json > "$OUT/eval-$b.json" 2>> "$OUT/install.err"
  say "eval on $b exit $?"
done
python3 - "$OUT" <<'PY' | tee -a "$OUT/bench.log"
import json, sys
try:
    g, t = (json.load(open(f"{sys.argv[1]}/eval-{b}.json")) for b in ("webgpu", "ts"))
    d = max(abs(a["logprob"] - b["logprob"]) for a, b in zip(g["positions"], t["positions"]) if a.get("logprob") is not None)
    print(f"perplexity webgpu {g['perplexity']:.6f} ts {t['perplexity']:.6f}; max |logprob difference| {d:.2e} over {len(g['positions'])} positions")
except Exception as e:
    print("eval comparison failed:", e)
PY
touch $W/setup.done
}

[ -f $W/setup.done ] || setup
[ "$PHASE" = setup ] && { say "setup done; build: $(tail -1 $W/llama-build.log)"; exit 0; }
# The build may not take the toy rows' time: stopped if it runs past 60% of the limit.
while [ ! -f $W/build.rc ] && [ $(el) -lt $(( LIMIT * 6 / 10 )) ]; do sleep 2; done
[ -f $W/build.rc ] || { say "llama.cpp build still running: stopped, toy rows only"; pkill ninja; pkill cmake; }
cp $W/llama-build.log "$OUT/"; say "llama.cpp build exit $(cat $W/build.rc 2>/dev/null) ($(tail -1 $W/llama-build.log))"
B=$W/lb/bin
for t in Q4_1 Q4_K_M Q8_0 Q4_0; do [ -x $B/llama-quantize ] && $B/llama-quantize $W/m/smol-random.F16.gguf $W/m/smol-random.$t.gguf $t "$(nproc)" > /dev/null 2>&1 || say "quantize $t failed"; done
say "models: $(ls $W/m | tr '\n' ' ')"
export TOY_LLAMA_CPP_GPU=$B
# Where a decode step's time goes on this GPU: recording, encoding, and running + reading back.
TOY_WEBGPU_TRACE=1 $NODE $APP/dist/bench/toyRun.js $W/m/smol-random.Q4_1.gguf 1 tg8 f16 webgpu 2>&1 | grep "steps;" | tail -4 | tee -a "$OUT/bench.log"
# One bench process per (model, test), so a slow cell costs only itself.
for t in ${MODELS:-Q4_1 Q4_K_M F16 Q8_0 Q4_0}; do
  for test in ${TESTS:-tg64 pp512 pp128 tg64@1024 tg64@4096}; do
    left=$(( LIMIT - $(el) )); [ $left -lt 30 ] && { say "stopping before $t $test: ${left}s left"; break 2; }
    cap=$(( left - 10 < 120 ? left - 10 : 120 ))
    timeout $cap $NODE $APP/dist/bench/main.js --only inference --backend webgpu --reps 1 \
      --tests $test --files $W/m/smol-random.$t.gguf --json >> "$OUT/bench.jsonl" 2>> "$OUT/bench.log"
    say "bench $t $test exit $? $(tail -1 "$OUT/bench.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("toy_tps"), r.get("llama_cpp_tps"))' 2>/dev/null)"
  done
done
say "done"
