#!/usr/bin/env bash
# readme_example.sh README SOURCE MAX_LINES: passes when the first ```cpp block of README is
# byte-identical to SOURCE (the example ctx builds and runs through the kit) and has fewer than
# MAX_LINES lines.
set -euo pipefail
readme=$1
source=$2
max=$3
block=$(awk '/^```cpp$/ {inside = 1; next} inside && /^```$/ {exit} inside {print}' "$readme")
if [ "$block" != "$(cat "$source")" ]; then
  diff <(printf '%s\n' "$block") "$source" >&2 || true
  echo "the README's verifier differs from $source" >&2
  exit 1
fi
lines=$(printf '%s\n' "$block" | wc -l)
if [ "$lines" -ge "$max" ]; then
  echo "the README's verifier has $lines lines; it must stay under $max" >&2
  exit 1
fi
echo "the README's verifier is $source ($lines lines)"
