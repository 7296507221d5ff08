#!/usr/bin/env bash
# Builds the release tarball dist/xpu-timer-<version>-linux-x86_64.tar.gz:
# bin/ (supervisor and tools), lib/ (libxpu_timer_inject.so), share/ (scripts),
# docs/ and deploy/ (Prometheus, Grafana, Kubernetes) and README.md, so the
# tarball alone is enough to read how to run it. Only glibc stays dynamic, so
# it runs unpacked on a stock CUDA machine. check_dist.sh refuses a tarball
# that lacks any of that.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIST:-$root/build-dist}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DXPU_TIMER_BUILD_TESTS=OFF \
  -DXPU_TIMER_PORTABLE=ON -DXPU_TIMER_STATIC_UNWIND=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
version=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
name="xpu-timer-$version-linux-x86_64"
stage="$root/dist/$name"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/share/xpu_timer"
for f in "$build"/bin/xpu_timer_*; do
  case "$(basename "$f")" in xpu_timer_sim_*) continue ;; esac
  cp "$f" "$stage/bin/"
done
cp "$build"/lib/libxpu_timer_inject.so "$stage/lib/"
[ -d "$build/share/xpu_timer" ] && cp -r "$build/share/xpu_timer/." "$stage/share/xpu_timer/"
cp "$root/scripts/describe_hang.py" "$stage/share/xpu_timer/"
cp -r "$root/docs" "$root/deploy" "$root/README.md" "$stage/"
echo "$version" > "$stage/VERSION"
# Refuse a tarball that needs more than glibc, libstdc++-free executables and the loader.
for f in "$stage"/bin/* "$stage"/lib/*.so; do
  readelf -h "$f" >/dev/null 2>&1 || continue
  extra=$(readelf -d "$f" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' |
          grep -Ev '^(libc\.so\.6|libm\.so\.6|ld-linux-x86-64\.so\.2|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1)$' || true)
  if [ -n "$extra" ]; then echo "make_dist: $f needs $extra" >&2; exit 1; fi
done
tar -C "$root/dist" -czf "$root/dist/$name.tar.gz" "$name"
"$root/scripts/check_dist.sh" "$root/dist/$name.tar.gz"
echo "$root/dist/$name.tar.gz"
