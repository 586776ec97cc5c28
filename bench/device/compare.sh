#!/bin/bash
# toy's webgpu backend before and after a change, on a lent GPU machine, without building
# llama.cpp (which takes most of a short device session): bench/device/pack.sh with OLD_REV packs
# the old dist/ next to the new app. The models are SmolLM2-shaped with random weights, quantized
# by toy's own quantizer. Runs alternate old, new, old, new, ... (REPS each), one process each
# (bench/toyRun.ts); prints every run and the median ratio new ÷ old per cell into $OUT/compare.log.
#   MODELS="Q4_1 F16" TESTS="tg64 tg64@4096 pp512" REPS=3 bench/device/compare.sh
set -u
OUT=${OUT:-/tmp/toy-device-out}; mkdir -p "$OUT"
W=/tmp/toydev; NODE=$W/bin/node
log() { echo "$*" | tee -a "$OUT/compare.log"; }
[ -n "${DRY:-}" ] || { for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; }
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json EGLV=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$ICD" ] && export VK_DRIVER_FILES=$ICD
[ -f "$EGLV" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$EGLV
mkdir -p $W/m $W/new $W/old
python3 - "$W" <<'PY'
import sys, tarfile
w = sys.argv[1]
for name, dest in [("node", w + "/bin"), ("app", w + "/new"), ("app-old", w + "/old")]:
    with tarfile.open(f".device/{name}.tar.xz") as t: t.extractall(dest)
PY
ln -sfn $W/new/node_modules $W/old/node_modules
log "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
for t in ${MODELS:-Q4_1 F16}; do
  $NODE $W/new/dist/bench/device/randomModel.js fill .device/smol.skel.gguf $W/m/r.$t.gguf $t || log "model $t failed"
done
for t in ${MODELS:-Q4_1 F16}; do
  for test in ${TESTS:-tg64 tg64@4096 pp512}; do
    for i in $(seq 1 ${REPS:-3}); do
      for v in old new; do
        r=$(timeout 120 $NODE $W/$v/dist/bench/toyRun.js $W/m/r.$t.gguf 1 $test f16 webgpu 2>/dev/null | tail -1)
        log "$t $test $v $r"
      done
    done
  done
done
python3 - "$OUT/compare.log" <<'PY' | tee -a "$OUT/compare.log"
import json, sys, statistics
runs = {}
for line in open(sys.argv[1]):
    parts = line.split(" ", 3)
    if len(parts) == 4 and parts[2] in ("old", "new"):
        try: runs.setdefault((parts[0], parts[1]), {}).setdefault(parts[2], []).append(json.loads(parts[3])["tps"])
        except Exception: pass
for (t, test), v in runs.items():
    if v.get("old") and v.get("new"):
        o, n = statistics.median(v["old"]), statistics.median(v["new"])
        print(f"{t} {test}: old {o:.1f} t/s, new {n:.1f} t/s, new/old {n / o:.2f}")
PY
