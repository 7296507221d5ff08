#!/usr/bin/env bash
# Regenerates the operator page's screenshots in docs/images/ (README's quick
# start shows them): runs its browser tests, which take them, with
# XPU_TIMER_SCREENSHOT_DIR pointing at a scratch folder, then copies the three
# into docs/images/. The tests themselves leave theirs in the build's
# test-artifacts/operator-page and never write into docs/.
#   operator-page-4-ranks.png     a real supervisor over a 4-rank sim job, rank 2 hung
#   operator-page-1024-ranks.png  1,024 ranks (the supervisor's documents, canned)
#   operator-page-phone.png       the same, 390 px wide
# usage: scripts/operator_page_screenshots.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
cmake --build "$build" --target operator_page_e2e_test operator_page_canned_test
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
export XPU_TIMER_SCREENSHOT_DIR="$shots"
"$build/bin/operator_page_e2e_test" --gtest_brief=1
"$build/bin/operator_page_canned_test" --gtest_brief=1 \
  --gtest_filter='*ThousandRanks*:*OnAPhone*'
for png in operator-page-4-ranks.png operator-page-1024-ranks.png operator-page-phone.png; do
  [ -s "$shots/$png" ] || { echo "operator_page_screenshots: $png was not taken" >&2; exit 1; }
  cp "$shots/$png" "$root/docs/images/$png"
  echo "docs/images/$png"
done
