#!/usr/bin/env bash
# Sets everything up, then runs every test; JUnit lands in build/ctest-junit.xml.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 300 --output-junit ctest-junit.xml
