#!/bin/sh
# Runs one benchmark program as a ctest smoke test: it must exit 0 and print at least one
# `ratio NAME: X` line, every X a finite number. No timing is asserted (ratios are read by people
# and by the closing notes, never compared with a target here).
out=$("$@" 2>&1)
status=$?
[ "$status" -eq 0 ] || { printf '%s\n' "$out"; echo "smoke: $1 exited $status"; exit 1; }
printf '%s\n' "$out" | grep '^ratio ' || { printf '%s\n' "$out"; echo "smoke: no ratio line"; exit 1; }
bad=$(printf '%s\n' "$out" | grep '^ratio ' | grep -Ev ': [0-9]+(\.[0-9]+)?$')
[ -z "$bad" ] || { echo "smoke: a ratio is not a finite number: $bad"; exit 1; }
