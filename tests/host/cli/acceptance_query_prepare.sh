#!/bin/sh
# Issue 7 acceptance, exactly as a user runs it: from a clean state dir, `ctx init`,
# `ctx catalog import examples/catalog`, `ctx query prepare --work examples/work/pdf-export.json
# --json` prints a ready plan whose first selection is the pdf-export skill.
# Usage: acceptance_query_prepare.sh CTX SOURCE_DIR
set -eu
ctx="$1"
cd "$2"
state="$(mktemp -d)/state"
trap 'rm -rf "$(dirname "$state")"' EXIT
"$ctx" init --state "$state"
"$ctx" catalog import examples/catalog --state "$state"
out="$("$ctx" query prepare --work examples/work/pdf-export.json --json --state "$state")"
echo "$out"
echo "$out" | grep -q '"status":"ready"' || { echo "not a ready plan" >&2; exit 1; }
echo "$out" | grep -q '"selections":\[{"actionability":"install","benefit_tier":"executable","capability_id":"skill:pdf-export"' \
  || { echo "pdf-export is not the first selection" >&2; exit 1; }
