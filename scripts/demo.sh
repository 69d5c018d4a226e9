#!/usr/bin/env bash
# Sets everything up, then runs the main job, `ctx demo`, on the embedded default: a fresh state
# directory of SQLite files (CTX_STATE, default build/demo-state). One line per step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
state="${CTX_STATE:-build/demo-state}"
rm -rf "$state"
build/host/cli/ctx demo --state "$state" --catalog examples/catalog
