#!/usr/bin/env bash
# Installs what the build and every test need, only what is missing, so that
# `make test` on a fresh Debian clone skips nothing: Debian packages, then the
# pinned npm packages of the viewer and manifest tests. The CUDA toolkit
# (headers under /usr/local/cuda) is expected to be on the machine already;
# it is not a Debian package here. Run again, it installs nothing.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_install() {
  echo "install_deps: installing $*"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

pkgs=(cmake make ninja-build g++ pkg-config python3 libunwind-dev libdw-dev libelf-dev libboost-dev
      nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev prometheus
      etcd-server   # the multi-node coordination store's tests run a real etcd
      libssl-dev openssl  # TLS to etcd; the tests make their certificates with openssl
      clang libclang-rt-dev llvm  # `make fuzz`: libFuzzer's runtime is in libclang-rt-dev
                                  # (only recommended by clang), llvm-symbolizer in llvm
      binutils                    # nm, objcopy: symbol-version and stripped-binary tests
      lld                         # the linker of every build (CMakeLists.txt says why)
      chromium)                   # the flame graph's and speedscope's browser tests

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

# npm packages, pinned, installed globally where the tests look (npm root -g):
# speedscope's static build for the timeline viewer test, ajv and js-yaml for
# deploy/kubernetes's manifest test. node and npm may already come from
# elsewhere than Debian (nodesource, a tarball); Debian's npm then conflicts
# with them, so it is installed only when there is no npm at all.
command -v npm >/dev/null 2>&1 || apt_install npm
npm_root=$(npm root -g 2>/dev/null)
npm_missing=()
[ -f "$npm_root/speedscope/dist/release/index.html" ] || npm_missing+=(speedscope@1.25.0)
NODE_PATH="$npm_root" node -e "require('ajv')" >/dev/null 2>&1 || npm_missing+=(ajv@8.17.1)
NODE_PATH="$npm_root" node -e "require('js-yaml')" >/dev/null 2>&1 || npm_missing+=(js-yaml@4.1.0)
if [ ${#npm_missing[@]} -gt 0 ]; then
  echo "install_deps: npm install -g ${npm_missing[*]}"
  $SUDO npm install -g --no-audit --no-fund --loglevel=error "${npm_missing[@]}"
fi

for h in /usr/local/cuda/include/cuda_runtime_api.h /usr/local/cuda/include/nccl.h \
         /usr/local/cuda/include/cublasLt.h; do
  [ -f "$h" ] || { echo "install_deps: $h not found: the CUDA toolkit (with NCCL headers) must be installed" >&2; exit 1; }
done
