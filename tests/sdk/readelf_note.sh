#!/usr/bin/env bash
# readelf_note.sh MODULE ID KIND VERSION: passes when `readelf -n` shows exactly one note owned by
# "ctx" in MODULE, of type 1 (readelf names it NT_VERSION), whose descriptor is the canonical
# identity JSON with abi 1.0 (an independent check of the note by binutils).
set -euo pipefail
module=$1
want="{\"abi\":{\"major\":1,\"minor\":0},\"id\":\"$2\",\"kind\":\"$3\",\"version\":\"$4\"}"
notes=$(readelf -nW "$module")
owners=$(awk '$1 == "ctx" {print}' <<<"$notes")
[ "$(grep -c . <<<"$owners")" = 1 ] || { printf '%s\n' "$notes" >&2; echo "want one ctx note" >&2; exit 1; }
size=$(awk '{print $2}' <<<"$owners")
[ "$((size))" = "${#want}" ] || { echo "descsz $size, want ${#want}" >&2; exit 1; }
grep -q "NT_VERSION" <<<"$owners" || { echo "the ctx note is not type 1: $owners" >&2; exit 1; }
hex=$(sed -n 's/.*description data: *//p' <<<"$(grep -A1 '^ *ctx ' <<<"$notes")" | tr -d ' \n')
[ "$hex" = "$(printf '%s' "$want" | od -An -tx1 | tr -d ' \n')" ] || {
  echo "descriptor $hex does not spell $want" >&2; exit 1; }
echo "readelf: $module carries $want"
