#!/usr/bin/env bash
# The release binary: one fully static executable (no Swift toolchain, no shared libraries
# needed at run time), optimised for size, linked by lld with identical-code folding and
# with the functions the common commands and the daemon run placed next to each other
# (scripts/release-order.txt, made by scripts/release-order.sh), so that a command maps
# as few of the binary's pages as possible. The C code built here (the C helpers and shims)
# is built without unwind tables: nothing unwinds through it (it throws no exceptions), and they
# were a large part of .eh_frame. Writes dist/pocketmesh (stripped).
#
#   bash scripts/release.sh            # build, strip, print the size
set -euo pipefail
cd "$(dirname "$0")/.."
ORDER="$PWD/scripts/release-order.txt"
# The build does not know the ordering file: remove the old binary so that it always relinks.
rm -f .build/release/pocketmesh
swift build -c release --product pocketmesh \
  -Xswiftc -static-executable -Xswiftc -Osize -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
  -Xcc -fno-asynchronous-unwind-tables \
  -Xlinker --gc-sections -Xlinker --icf=all -Xlinker -O2 \
  -Xlinker "--symbol-ordering-file=$ORDER" -Xlinker --no-warn-symbol-ordering
mkdir -p dist
strip -o dist/pocketmesh .build/release/pocketmesh
echo "dist/pocketmesh: $(stat -c %s dist/pocketmesh) bytes"
