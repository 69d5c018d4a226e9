#!/usr/bin/env bash
# expect_compile_error.sh SOURCE MESSAGE CXX [FLAGS...]
# Passes when `CXX FLAGS -fsyntax-only SOURCE` fails with MESSAGE in its diagnostics, or, when
# MESSAGE is "-", when it compiles cleanly.
set -u
source=$1
message=$2
shift 2
output=$("$@" -fsyntax-only "$source" 2>&1)
status=$?
if [ "$message" = "-" ]; then
  [ "$status" -eq 0 ] && { echo "compiles: $source"; exit 0; }
  printf '%s\n' "$output"; echo "expected $source to compile" >&2; exit 1
fi
if [ "$status" -eq 0 ]; then
  echo "expected $source not to compile" >&2
  exit 1
fi
if ! grep -qF -- "$message" <<<"$output"; then
  printf '%s\n' "$output"
  echo "the diagnostics of $source do not say: $message" >&2
  exit 1
fi
echo "refused as expected: $message"
