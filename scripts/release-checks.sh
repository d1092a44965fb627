#!/usr/bin/env bash
# Checks that each trick the release link relies on still works with the toolchain at hand, each
# failing with a sentence of its own (a toolchain that changes under a trick would otherwise show
# only as "over budget", or as a binary that prints something else than the debug build):
#   - the Unicode scalar-name stub (scripts/release-discard.ld, Sources/CMeshLink/CMeshLinkUnicode.c):
#     the standard library still looks the names up through the functions the link script points
#     at the stub, and the name tables (about 550 KB) are not in the binary;
#   - the link script: no unwind tables (.eh_frame), the backtracer's buffers take no room in the
#     file (swift5_backtrace NOBITS), constant data read-only (.rodata not writable);
#   - reflection metadata off (Package.swift) and everything else: the release binary's demo prints
#     exactly what the debug build's prints (a value printed through reflection would print its
#     type's name instead).
# The ordering list has its own check (scripts/release-order-check.sh, run by the link).
#
#   scripts/release-checks.sh STRIPPED UNSTRIPPED STDLIB-ARCHIVE [RUNNER]
# RUNNER runs the binary (qemu-aarch64-static for the aarch64 one).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1" unstripped="$2" stdlib="$3" runner="${4:-}"
failed=0
fail() { echo "release check: $*" >&2; failed=1; }

# The stub: the standard library must still call the functions the link script redirects...
undefined=""
[ -f "$stdlib" ] && undefined=$(readelf -sW "$stdlib" 2>/dev/null | awk '$7 == "UND" { print $8 }' | sort -u)
for f in _swift_stdlib_getScalarName _swift_stdlib_getNameAlias; do
  grep -q "^_\?$f = " scripts/release-discard.ld || fail "scripts/release-discard.ld no longer redirects $f."
  if [ -f "$stdlib" ] && ! grep -qx "$f" <<<"$undefined"; then
    fail "the standard library ($stdlib) no longer calls $f: the Unicode scalar-name stub (CMeshLinkUnicode.c, release-discard.ld) must follow its new lookup, or the name tables stay in the binary."
  fi
done
# ...and the tables must be gone from the binary.
tables=$(readelf -sW "$unstripped" | grep -c -E '_swift_stdlib_(names|nameAlias|word_indices)' || true)
[ "$tables" -eq 0 ] || fail "the Unicode scalar-name tables are in the release binary ($tables symbols): the stub no longer replaces the standard library's lookup."

# The link script's sections.
sections=$(readelf -SW "$bin")
if grep -qE '\.eh_frame' <<<"$sections"; then fail "the release binary has unwind tables (.eh_frame): the link script's /DISCARD/ no longer applies."; fi
if grep -E ' swift5_backtrace ' <<<"$sections" | grep -qv NOBITS; then fail "swift5_backtrace takes room in the file: the link script no longer makes it NOLOAD."; fi
# (the flags are the sixth field after the section's name: type, address, offset, size, entry size, flags)
if awk '{ for (i = 1; i <= NF; i++) if ($i == ".rodata") print $(i + 6) }' <<<"$sections" | grep -q W; then
  fail ".rodata is writable: the link script no longer moves the toolchain's writable read-only sections aside."
fi

# What the release binary prints is what the debug build prints.
if [ -x .build/debug/pocketmesh ]; then
  # (the wall-clock time the simulation took is the one thing that differs from run to run)
  wall='s/of mesh time in [0-9.]* m\?s/of mesh time in N ms/'
  if ! diff <(.build/debug/pocketmesh demo 2>&1 | sed "$wall") <($runner "$bin" demo 2>&1 | sed "$wall") > /tmp/release-demo-diff.$$ 2>&1; then
    head -20 /tmp/release-demo-diff.$$ >&2
    fail "the release binary's demo prints something else than the debug build's (above: < debug, > release); a value printed through reflection metadata, which release builds leave out, prints its type's name."
  fi
  rm -f /tmp/release-demo-diff.$$
fi
[ $failed -eq 0 ] && echo "release checks: the Unicode-name stub, the link script's sections and the demo's output hold for $bin"
exit $failed
