#!/bin/sh
# Runs the MeshLink tests that need a fake udev device under umockdev: a CP210x on /dev/ttyUSB0
# (cp210x.umockdev) whose port answers DEVICE_QUERY (cp210x-device-query.script).
# umockdev works through LD_PRELOAD, so the tests must be a dynamically linked debug build.
# Usage: Tests/umockdev/run.sh [extra `swift test` arguments]   (from anywhere in the package)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
package=$(cd "$here/../.." && pwd)
command -v umockdev-run >/dev/null || { echo "umockdev-run not found: apt-get install umockdev" >&2; exit 1; }
cd "$package"
swift build --build-tests
POCKETMESH_UMOCKDEV_SCRIPT=1 exec umockdev-run \
    --device "$here/cp210x.umockdev" \
    --script /dev/ttyUSB0="$here/cp210x-device-query.script" -- \
    swift test --skip-build --filter 'UmockdevTests' "$@"
