#!/usr/bin/env bash
# expect_kit_failure.sh TEST RUNNER PLUGIN [ARGS...]
# Passes only when `RUNNER PLUGIN ARGS...` exits with status 1 (test failures, not a crash or a
# usage error) and reports TEST among its failed tests.
set -u
expected=$1
shift
output=$("$@" 2>&1)
status=$?
if [ "$status" -ne 1 ]; then
  printf '%s\n' "$output"
  echo "expect_kit_failure: wanted exit status 1, got $status" >&2
  exit 1
fi
if ! grep -qF "[  FAILED  ] $expected" <<<"$output"; then
  printf '%s\n' "$output"
  echo "expect_kit_failure: $expected did not fail" >&2
  exit 1
fi
echo "ctx-conformance rejected the plugin: $expected failed as expected"
