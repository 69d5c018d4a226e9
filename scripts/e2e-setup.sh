#!/usr/bin/env bash
# Installs the real hosts the real-host suite (tests/e2e) drives, at their pinned versions, into
# an npm prefix of their own: $CTX_E2E_PREFIX, else ~/.cache/ctx-e2e/codex-V-claude-V. Does
# nothing when both are there at those versions. Needs node/npm and the npm registry.
set -euo pipefail
codex_version=0.169.0
claude_version=2.1.332  # named: on node 20 an unversioned install picks an old release
prefix="${CTX_E2E_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ctx-e2e/codex-$codex_version-claude-$claude_version}"
installed() {
  [ "$("$prefix/node_modules/.bin/codex" --version 2>/dev/null)" = "codex-cli $codex_version" ] &&
    [ "$("$prefix/node_modules/.bin/claude" --version 2>/dev/null)" = "$claude_version (Claude Code)" ]
}
if installed; then
  echo "ctx e2e setup: codex $codex_version and claude $claude_version in $prefix"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "ctx e2e setup: installing nodejs and npm" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq nodejs npm >/dev/null
fi
mkdir -p "$prefix"
[ -f "$prefix/package.json" ] || echo '{"private": true}' >"$prefix/package.json"
start=$(date +%s)
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
  "@openai/codex@$codex_version" "@anthropic-ai/claude-code@$claude_version"
installed || { echo "ctx e2e setup: the CLIs in $prefix are not the pinned versions" >&2; exit 1; }
echo "ctx e2e setup: installed codex $codex_version and claude $claude_version in $prefix ($(($(date +%s) - start)) s)"
