#!/usr/bin/env bash
# Installs missing Debian packages (only when some are missing), configures and builds into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build clang libboost-dev nlohmann-json3-dev libsqlite3-dev
          libssl-dev libgtest-dev libgmock-dev googletest libbenchmark-dev python3 sqlite3
          openssl openssh-client libyaml-cpp-dev libcli11-dev libtomlplusplus-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ctx setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTX_WERROR=ON
fi
cmake --build build --parallel "$(nproc)"
