#!/usr/bin/env bash
# Compiles every source of the tree with Clang's front end (-fsyntax-only: every warning, no code
# generated), each with the flags its target builds with and -Werror, into nothing. Exit 1 naming
# each file that does not compile cleanly. Configures build-clang/ (compile commands only) once.
# Needs the packages scripts/setup.sh installs (clang among them).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-clang
if [ ! -f "$dir/compile_commands.json" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCTX_WERROR=ON >/dev/null
fi
python3 - "$dir/compile_commands.json" "$(nproc)" <<'EOF'
import json, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

def syntax_only(entry):
    args, skip = [], False
    for arg in shlex.split(entry["command"]):
        if skip:
            skip = False
        elif arg in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif arg not in ("-c", "-MD", "-MMD"):
            args.append(arg)
    done = subprocess.run(args + ["-fsyntax-only"], cwd=entry["directory"],
                          capture_output=True, text=True)
    return entry["file"], done.returncode, done.stderr

entries = json.load(open(sys.argv[1]))
with ThreadPoolExecutor(int(sys.argv[2])) as pool:
    results = list(pool.map(syntax_only, entries))
failed = [r for r in results if r[1] != 0]
for name, _, errors in failed:
    print(errors, end="", file=sys.stderr)
print(f"clang-check: {len(results) - len(failed)} of {len(results)} sources compile cleanly"
      + "".join(f"\n  not: {name}" for name, _, _ in failed))
sys.exit(1 if failed else 0)
EOF
