#!/usr/bin/env bash
# Installs the Debian packages nklab needs to build and test, if missing.
# Usage: scripts/install-deps.sh [build|test|browser]
#   browser: what tests/browser/run.sh needs (headless Chromium, node, npm)
# The Python front-end builds against Debian's python3 (python3-dev, numpy);
# its tests also pass torch CPU tensors (python3-torch).
set -euo pipefail
want=(libopenblas-dev libopenblas-serial-dev libsleef-dev python3-dev python3-numpy)
if [ "${1:-build}" = test ]; then
    want+=(libclang-rt-14-dev clang pkg-config python3-torch)
fi
if [ "${1:-build}" = browser ]; then
    want+=(chromium)
    # node and npm from any source will do (some machines ship their own)
    { command -v node && command -v npm; } >/dev/null || want+=(nodejs npm)
fi
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq "${missing[@]}" >&2
