#!/usr/bin/env bash
# expect_kit_failure.sh TEST REASON RUNNER PLUGIN [ARGS...]
# Passes only when `RUNNER PLUGIN ARGS...` exits with status 1 (test failures, not a crash or a
# usage error), reports TEST among its failed tests and, unless REASON is "-", says REASON. With
# EXPECT_ONLY_FAILURE=1, TEST must be the only failure. The plugin's own output must never reach
# the runner's output raw: no line may start with what the misbehaving fixtures print.
set -u
expected=$1
reason=$2
shift 2
output=$("$@" 2>&1)
status=$?
fail() {
  printf '%s\n' "$output"
  echo "expect_kit_failure: $*" >&2
  exit 1
}
[ "$status" -eq 1 ] || fail "wanted exit status 1, got $status"
grep -qF "[  FAILED  ] $expected" <<<"$output" || fail "$expected did not fail"
if [ "$reason" != "-" ]; then
  grep -qF -- "$reason" <<<"$output" || fail "the output does not say: $reason"
fi
if [ "${EXPECT_ONLY_FAILURE:-0}" = 1 ]; then
  grep -qF " 1 FAILED TEST" <<<"$output" || fail "$expected was not the only failure"
fi
if grep -qE '^(ok verifier:fixture-misbehave|fixture-misbehave: diagnostics)' <<<"$output"; then
  fail "the plugin's own output reached the runner's output"
fi
echo "ctx-conformance rejected the plugin: $expected failed as expected${reason:+ ($reason)}"
