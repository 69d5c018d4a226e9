#!/usr/bin/env bash
# Sets everything up, then runs the main job on the embedded default: a state directory of SQLite
# files (CTX_STATE, default build/demo-state). Today: pin the in-tree plugins, verify, list them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
state="${CTX_STATE:-build/demo-state}"
rm -rf "$state"
mkdir -p "$state"
lock="$state/plugins.lock.json"
build/host/cli/ctx plugin pin --lock "$lock" --state "$state" build/plugins/*/ctx_plugin_*.so \
  build/plugins/*/*/ctx_plugin_*.so
build/host/cli/ctx plugin verify --lock "$lock" --state "$state"
build/host/cli/ctx plugin list --lock "$lock"
