#!/bin/sh
# Copies the built dist/ and addon into a scratch folder ($1), so a long measurement keeps running
# the same build while the work tree is rebuilt:  sh scripts/snapshot-for-bench.sh /tmp/snap
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$1" && mkdir -p "$1/build/Release"
cp -r "$root/dist" "$root/scripts" "$root/package.json" "$1/"
cp "$root/build/Release/toy_native.node" "$1/build/Release/"
ln -s "$root/node_modules" "$1/node_modules"
