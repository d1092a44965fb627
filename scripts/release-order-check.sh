#!/usr/bin/env bash
# Counts the entries of a release link's ordering list that lld could not place (its warnings
# "no such symbol", "unable to order undefined/discarded symbol" in the link's output) and fails
# when they are more than 5% of the list (POCKETMESH_ORDER_MAX_MISS percent): a stale list puts
# the hot code of new functions anywhere in the binary, and every command then maps more of it.
#
#   scripts/release-order-check.sh ORDER-FILE LINK-OUTPUT
set -euo pipefail
order="$1" log="$2"
max="${POCKETMESH_ORDER_MAX_MISS:-5}"
entries=$(grep -c . "$order" || true)
misses=$(grep -c -e 'symbol ordering file: no such symbol' -e 'unable to order' "$log" || true)
pct=$(awk -v m="$misses" -v e="$entries" 'BEGIN { printf "%.1f", e ? 100 * m / e : 0 }')
echo "ordering list: $entries entries, $misses not in the binary ($pct%, at most $max%)"
if awk -v m="$misses" -v e="$entries" -v x="$max" 'BEGIN { exit !(m * 100 > e * x) }'; then
  echo "release: the ordering list misses $misses of its $entries entries ($pct%, more than $max%): regenerate it with scripts/release-order.sh (the package's part: scripts/release-order.sh --project)." >&2
  exit 1
fi
