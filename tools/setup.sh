#!/usr/bin/env bash
# Installs what reheap needs from Debian 12 packages, skipping what is already there.
# Idempotent: running it twice installs nothing the second time. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libuv1-dev libmsgpack-cxx-dev libgtest-dev libgmock-dev libbenchmark-dev
  libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev
  libxxhash-dev clang libclang-rt-14-dev valgrind
  libcaf-dev wrk nginx-light util-linux
  redis-server redis-tools python3-redis netcat-openbsd
  criu libprotobuf-c-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
