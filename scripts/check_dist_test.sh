#!/usr/bin/env bash
# ctest check_dist_test: check_dist.sh passes a tarball holding every entry
# it lists, and refuses one without docs/usage.md (as make_dist.sh made them
# before docs/ and deploy/ were shipped) with the line naming it.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stage="$tmp/xpu-timer-test-linux-x86_64"
while read -r f; do
  mkdir -p "$(dirname "$stage/$f")" && echo x > "$stage/$f"
done < <("$here/check_dist.sh" --list)
tar -C "$tmp" -czf "$tmp/good.tar.gz" "$(basename "$stage")"
if ! out=$("$here/check_dist.sh" "$tmp/good.tar.gz" 2>&1); then
  echo "FAIL: a complete tarball was refused: $out"; exit 1
fi
rm "$stage/docs/usage.md"
tar -C "$tmp" -czf "$tmp/bad.tar.gz" "$(basename "$stage")"
out=$("$here/check_dist.sh" "$tmp/bad.tar.gz" 2>&1)
rc=$?
want="check_dist: $tmp/bad.tar.gz lacks docs/usage.md"
if [ "$rc" -ne 1 ] || [ "$out" != "$want" ]; then
  echo "FAIL: exit $rc, said '$out', want exit 1 and '$want'"; exit 1
fi
echo "PASS"
