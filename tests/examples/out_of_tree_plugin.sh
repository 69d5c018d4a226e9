#!/usr/bin/env bash
# out_of_tree_plugin.sh BUILD_DIR EXAMPLE_DIR CLANGXX MODULE NOTE
# Installs the ctx build into a temporary prefix, configures and builds the example plugin with
# CLANGXX against that prefix only, checks that its module MODULE exports just the entry symbol
# and carries the identity note NOTE, then runs the installed ctx-conformance on it and the
# example's own ctest (the kit linked as a library).
set -euo pipefail
build_dir=$1
example_dir=$2
clangxx=$3
module=$4
want=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/ctx-example-XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/log

step() { echo "== $*"; }
run() { "$@" >"$log" 2>&1 || { cat "$log"; echo "failed: $*" >&2; exit 1; }; }

step "install the SDK into $work/prefix"
run cmake --install "$build_dir" --prefix "$work/prefix"
for f in include/ctx/abi/plugin_abi.h include/ctx/sdk/plugin.hpp include/ctx/sdk/error.hpp \
         include/ctx/sdk/internal/note.hpp share/doc/ctx-sdk/README.md \
         include/ctx/conformance/conformance.hpp lib/cmake/ctx-sdk/ctx-sdk-config.cmake \
         lib/cmake/ctx-sdk/ctx-sdk-functions.cmake bin/ctx-conformance; do
  [ -e "$work/prefix/$f" ] || { echo "missing from the install: $f" >&2; exit 1; }
done
# The SDK stands on its own (issue 33 item 6): no host/ header and no host library is installed.
if [ -e "$work/prefix/include/ctx/host" ] || ls "$work/prefix"/lib/libctx_core.a \
     "$work/prefix"/lib/libctx_plugins.a "$work/prefix"/lib/libctx_engine.a >/dev/null 2>&1; then
  echo "the SDK install carries host/ headers or libraries" >&2; exit 1
fi

step "configure and build the example with $clangxx"
run cmake -S "$example_dir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_PREFIX_PATH="$work/prefix"
grep -q "CMAKE_CXX_COMPILER_ID:.*Clang\|CMAKE_CXX_COMPILER:.*clang" "$work/build/CMakeCache.txt" || {
  echo "the example was not configured with clang++" >&2; exit 1; }
run cmake --build "$work/build"
plugin=$work/build/$module

step "the module exports only ctx_plugin_entry"
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
[ "$exports" = "ctx_plugin_entry" ] || { echo "unexpected exports: $exports" >&2; exit 1; }

step "the module carries the ctx identity note"
objcopy -O binary --only-section=.note.ctx.plugin "$plugin" "$work/note"
note=$(tail -c +17 "$work/note" | tr -d '\0')
[ "$note" = "$want" ] || { readelf -n "$plugin" >&2; echo "unexpected note: $note" >&2; exit 1; }

step "installed ctx-conformance on the example"
"$work/prefix/bin/ctx-conformance" "$plugin" --config "$example_dir/conformance.json"

step "the example's own ctest (kit linked as a library)"
(cd "$work/build" && ctest --output-on-failure)
