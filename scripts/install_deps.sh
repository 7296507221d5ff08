#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing.
# The CUDA toolkit (headers under /usr/local/cuda) is expected to be on the
# machine already; it is not a Debian package here.
set -euo pipefail

pkgs=(cmake make g++ pkg-config python3 libunwind-dev libdw-dev libelf-dev libboost-dev
      nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev prometheus
      etcd-server   # the multi-node coordination store's tests run a real etcd
      libssl-dev openssl  # TLS to etcd; the tests make their certificates with openssl
      clang libclang-rt-dev llvm)  # `make fuzz`: libFuzzer's runtime is in libclang-rt-dev
                                   # (only recommended by clang), llvm-symbolizer in llvm

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

for h in /usr/local/cuda/include/cuda_runtime_api.h /usr/local/cuda/include/nccl.h \
         /usr/local/cuda/include/cublasLt.h; do
  [ -f "$h" ] || { echo "install_deps: $h not found: the CUDA toolkit (with NCCL headers) must be installed" >&2; exit 1; }
done
