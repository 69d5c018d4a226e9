#!/usr/bin/env bash
# Sets everything up, then runs every test; JUnit lands in build/ctest-junit.xml. The real-host
# suite's CLIs are installed first (scripts/e2e-setup.sh; when that fails, e.g. offline, the
# e2e tests fail and say why).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/e2e-setup.sh || echo "ctx test: scripts/e2e-setup.sh failed: the e2e tests will fail" >&2
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 300 --output-junit ctest-junit.xml
