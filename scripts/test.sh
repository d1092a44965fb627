#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds, runs the Swift tests, the interop tests
# against third-party MeshCore software, the udev discovery tests and a short fuzz run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export POCKETMESH_VENV="${POCKETMESH_VENV:-$PWD/.venv-interop}"
export POCKETMESH_SHARED="${POCKETMESH_SHARED:-$(cd .. && pwd)/shared}"

swift build --build-tests
export POCKETMESH_BIN="$PWD/.build/debug/pocketmesh"

echo "== Swift tests"
swift test --skip-build

if [ -x Tests/umockdev/run.sh ]; then
  echo "== udev discovery tests (umockdev)"
  bash Tests/umockdev/run.sh
fi

if [ -d Tests/interop ]; then
  echo "== interop tests (third-party peers and clients)"
  "$POCKETMESH_VENV/bin/python" -m pytest -q -p no:cacheprovider Tests/interop
fi

if [ -x fuzz/run.sh ]; then
  echo "== fuzz (short run)"
  bash fuzz/run.sh "${POCKETMESH_FUZZ_SECONDS:-20}"
fi
echo "all test stages passed"
