#!/usr/bin/env bash
# Builds the store benchmark in release mode and runs it. Arguments go to store-bench
# (--messages N, --dir DIR on the file system to measure; default a fresh directory in /tmp).
set -euo pipefail
cd "$(dirname "$0")"
swift build -c release --product store-bench
exec .build/release/store-bench "$@"
