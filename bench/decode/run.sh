#!/usr/bin/env bash
# Builds the decode benchmark in release mode and runs it. Arguments go to decode-bench
# (--runs N, --rounds R).
set -euo pipefail
cd "$(dirname "$0")"
swift build -c release --product decode-bench >&2
exec .build/release/decode-bench "$@"
