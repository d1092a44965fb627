#!/usr/bin/env bash
# The aarch64 build's ordering list. valgrind cannot profile a program under qemu-user, so the list
# comes from the x86_64 runs (scripts/release-order.sh), and part of it names things only the x86_64
# build has. Two kinds, handled apart:
#
# - The toolchain's and the libraries' part (scripts/release-order-base.txt) is for Swift 6.3's
#   runtime and standard library and for x86_64's C library; the aarch64 build links Debian
#   trixie's Swift 6.0.3 runtime and arm64's C library. `--base` writes
#   scripts/release-order-base-aarch64.txt: the entries of the x86_64 list that the aarch64 link
#   defines (nm of its unstripped binary; what it lacks: x86_64's string functions such as
#   __strrchr_avx2 and their ifunc resolvers, math functions that are instructions on arm64,
#   Float80, runtime functions 6.0.3 names differently or does not have), then all of arm64's
#   string and memory function variants (the CPU that runs the binary chooses among them, as for
#   x86_64). Like the x86_64 base list it changes only with the toolchain or the libraries:
#   rerun after either, or after regenerating scripts/release-order-base.txt.
# - The package's part (scripts/release-order-project.txt) has the same names on both, except
#   for what the compiler makes only for x86_64: `got.` entries (x86_64's GOT-equivalent
#   symbols) and Float80 (x86_64's long double). `--project FILE` prints FILE without them;
#   scripts/release-aarch64.sh links with that, after the aarch64 base list.
#
# What is left unmatched on aarch64 are specialisations and merged or outlined functions that
# 6.0.3 makes differently from 6.3 (about 3% of the list); scripts/release-aarch64.sh fails above 5%.
#
#   bash scripts/release-order-aarch64.sh --base [UNSTRIPPED-AARCH64-BINARY]
#   bash scripts/release-order-aarch64.sh --project scripts/release-order-project.txt
set -euo pipefail
cd "$(dirname "$0")/.."
make_base() {  # DEFINED-NAMES: writes scripts/release-order-base-aarch64.txt
  python3 - "$1" scripts/release-order-base.txt scripts/release-order-base-aarch64.txt <<'PY'
import re, sys
defined_file, base_file, out_file = sys.argv[1:4]
defined = set(open(defined_file).read().split())
base = open(base_file).read().split()
# Symbols the linker makes (section bounds) cannot be ordered on either architecture.
synthetic = re.compile(r"^(__start_|__stop_|__init_array_|__fini_array_|__preinit_array_|__rela_iplt_)")
out, seen = [], set()
for name in base:
    if name in defined and not synthetic.match(name) and name not in seen:
        seen.add(name); out.append(name)
kept = len(out)
variant = re.compile(r"^__(mem|str|stp|raw|wmem|wcs)\w*_(generic|nosimd|asimd|simd|sve\w*|mops|zva\w*|thunderx\w*|falkor|a64fx|kunpeng|emag|oryon\w*)$")
for name in sorted(defined):
    if variant.match(name) and name not in seen:
        seen.add(name); out.append(name)
open(out_file, "w").write("".join(n + "\n" for n in out))
print(f"release-order-aarch64: {kept} of the {len(base)} base entries are in the aarch64 link, "
      f"plus {len(out) - kept} arm64 string and memory variants: {len(out)} in {out_file}")
PY
}
case "${1:-}" in
  --project)
    grep -v -e '^got\.' -e 'Float80' "${2:?--project takes a list file}" || true
    ;;
  --base)
    BIN="${2:-${POCKETMESH_AARCH64_CACHE:-$PWD/.build-aarch64}/build/aarch64-unknown-linux-gnu/release/pocketmesh}"
    [ -f "$BIN" ] || { echo "release-order-aarch64: $BIN missing: run scripts/release.sh --arch aarch64 first." >&2; exit 1; }
    command -v nm >/dev/null || { echo "release-order-aarch64: nm (binutils) is needed." >&2; exit 1; }
    nm --defined-only "$BIN" | awk 'NF == 3 { print $3 }' > .build/aarch64-defined.txt
    make_base .build/aarch64-defined.txt
    ;;
  *) echo "release-order-aarch64: use --base [BINARY] or --project FILE." >&2; exit 2 ;;
esac
