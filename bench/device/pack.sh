#!/bin/bash
# Fill .device/ (ignored by git) with what bench/device/gpu-run.sh needs on a bare GPU machine:
# this Node binary, the built app (dist/ and the runtime node_modules, webgpu's linux-x64 part
# only), llama.cpp's source from the bench's sdist (GPU backends other than CUDA left out), and
# the metadata-only skeleton of SmolLM2; and .gl/ with Debian's Vulkan loader. About 40 MB.
#   LLAMA_SRC=<llama.cpp source dir> bench/device/pack.sh
# With OLD_REV=<git revision>, also .device/app-old.tar.xz: that revision's dist/, built in a
# temporary worktree, for bench/device/compare.sh (toy before and after a change, interleaved).
set -eu
cd "$(dirname "$0")/../.."
: "${LLAMA_SRC:?set LLAMA_SRC to the llama.cpp source (vendor/llama.cpp of the sdist)}"
FX=${TOY_FIXTURES:-../shared/fixtures}
mkdir -p .device .gl .git/info
for d in /.device/ /.gl/; do grep -qx "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
npm run build > /dev/null
tar -cf - -C "$(dirname "$(readlink -f "$(command -v node)")")" node | xz -T0 -6 > .device/node.tar.xz
tar -cJf .device/app.tar.xz dist package.json --exclude=node_modules/typescript --exclude=node_modules/playwright-core \
  --exclude=node_modules/openai --exclude=node_modules/@types --exclude='node_modules/webgpu/dist/darwin*' \
  --exclude='node_modules/webgpu/dist/win32*' --exclude='node_modules/webgpu/dist/linux-arm64' node_modules
skip=(cann hexagon metal musa opencl openvino sycl virtgpu vulkan webgpu zdnn zendnn et hip)
tar -cJf .device/llama.cpp.tar.xz -C "$(dirname "$LLAMA_SRC")" "${skip[@]/#/--exclude=llama.cpp/ggml/src/ggml-}" \
  --exclude=llama.cpp/build $(cd "$(dirname "$LLAMA_SRC")" && echo llama.cpp/{CMakeLists.txt,cmake,ggml,src,include,common,tools,vendor,licenses,LICENSE,app})
if [ -n "${OLD_REV:-}" ]; then
  old=$(mktemp -d); git worktree add -q --detach "$old/w" "$OLD_REV"
  ln -s "$PWD/node_modules" "$old/w/node_modules"
  (cd "$old/w" && npx tsc -p tsconfig.json && node scripts/postbuild.mjs > /dev/null && tar -cJf "$OLDPWD/.device/app-old.tar.xz" dist package.json)
  git worktree remove --force "$old/w"; rm -rf "$old"
fi
node dist/bench/device/randomModel.js skeleton "$FX/models/SmolLM2-135M-Instruct.Q4_1.gguf" .device/smol.skel.gguf
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
mkdir -p /tmp/amd64/partial; apt-get $o update > /dev/null; (cd .gl && apt-get $o download libvulkan1)
du -sh .device .gl
