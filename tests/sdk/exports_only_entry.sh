#!/usr/bin/env bash
# exports_only_entry.sh MODULE...: passes when every module's dynamic symbol table defines
# exactly one symbol, ctx_plugin_entry (what ctx_add_plugin promises).
set -euo pipefail
for module in "$@"; do
  exports=$(nm -D --defined-only "$module" | awk '{print $3}')
  if [ "$exports" != "ctx_plugin_entry" ]; then
    echo "$module exports more than ctx_plugin_entry:" >&2
    printf '%s\n' "$exports" | head -20 >&2
    exit 1
  fi
done
echo "each of $# modules exports only ctx_plugin_entry"
