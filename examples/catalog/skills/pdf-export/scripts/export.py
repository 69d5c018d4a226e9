#!/usr/bin/env python3
"""Export a Markdown or HTML file to PDF (pandoc when present)."""
import argparse
import shutil
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("--out", required=True)
    parser.add_argument("--paper", default="a4", choices=["a4", "letter"])
    parser.add_argument("--toc", action="store_true")
    args = parser.parse_args()
    if shutil.which("pandoc") is None:
        print("pandoc is not installed", file=sys.stderr)
        return 1
    command = ["pandoc", args.source, "-o", args.out, "-V", f"papersize:{args.paper}"]
    if args.toc:
        command.append("--toc")
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
