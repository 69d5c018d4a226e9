#!/usr/bin/env python3
"""Assembles bench/data/catalog/<source>/ from git mirrors of public repositories.

Usage: assemble_catalog.py SOURCE=OWNER/REPO=GIT_DIR [...]   (GIT_DIR: a clone or bare mirror)

Each source keeps its LICENSE beside its files. Only SKILL.md files and agent .md files are
copied (no resource trees). Frontmatter is normalised only as far as today's importer needs
(examples/catalog layout) and every change is listed in bench/data/catalog/NORMALISED.md:
  - keys the importer does not accept are dropped (version, argument-hint, ...);
  - a skill's folder is its frontmatter name lowercased; an agent's file is its frontmatter name;
  - a description over 1024 characters is cut at the last word boundary before 1024;
  - '<' and '>' in a skill description become '(' and ')'.
The body after the frontmatter is kept byte for byte.
"""
import os, re, subprocess, sys, yaml

SKILL_KEYS = ["name", "description", "license", "compatibility", "metadata", "allowed-tools"]
AGENT_KEYS = ["name", "description", "tools", "model", "color"]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "catalog")
EXCLUDE = {  # not redistributable (proprietary "source-available" licence) or templates
    "anthropics": ["skills/docx/", "skills/pdf/", "skills/pptx/", "skills/xlsx/", "template/"],
}
LICENSES = {"anthropics": "skills/mcp-builder/LICENSE.txt"}


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                          capture_output=True).stdout


def split(text):
    m = re.match(r"\A---\r?\n(.*?)\r?\n---\r?\n?(.*)\Z", text, re.S)
    if not m:
        return None, None
    return yaml.safe_load(m.group(1)), m.group(2)


def cut(desc, limit=1024):
    desc = " ".join(desc.split())
    if len(desc) <= limit:
        return desc, False
    return desc[:limit].rsplit(" ", 1)[0].rstrip(",;:"), True


def main():
    notes = []
    sources = []
    names = set()
    for arg in sys.argv[1:]:
        source, repo, gitdir = arg.split("=", 2)
        commit = git(gitdir, "rev-parse", "HEAD").decode().strip()
        url = "https://github.com/" + repo
        files = git(gitdir, "ls-tree", "-r", "--name-only", "HEAD").decode().splitlines()
        root = os.path.join(OUT, source)
        lic = LICENSES.get(source, "LICENSE")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "LICENSE"), "wb") as f:
            f.write(git(gitdir, "show", "HEAD:" + lic))
        count = 0
        for path in sorted(files):
            if any(path.startswith(p) for p in EXCLUDE.get(source, [])):
                continue
            is_skill = path.endswith("/SKILL.md")
            is_agent = re.search(r"(^|/)agents/[^/]+\.md$", path) is not None
            if not (is_skill or is_agent):
                continue
            text = git(gitdir, "show", "HEAD:" + path).decode("utf-8")
            fm, body = split(text)
            if not isinstance(fm, dict) or "name" not in fm or "description" not in fm:
                notes.append(f"- {source}:{path}: skipped (no name/description frontmatter)")
                continue
            changes = []
            keys = SKILL_KEYS if is_skill else AGENT_KEYS
            dropped = [k for k in fm if k not in keys]
            if dropped:
                changes.append("dropped keys " + ", ".join(dropped))
            out = {k: fm[k] for k in keys if k in fm}
            if is_skill and isinstance(out.get("metadata"), dict):
                md = {k: v for k, v in out["metadata"].items()
                      if k == "tags" or isinstance(v, (str, int, float))}
                if md != out["metadata"]:
                    changes.append("dropped non-string metadata")
                out["metadata"] = {k: (v if k == "tags" else str(v)) for k, v in md.items()}
            for k in ("license", "compatibility", "allowed-tools", "model", "color"):
                if k in out and not isinstance(out[k], str):
                    out[k] = ", ".join(map(str, out[k])) if isinstance(out[k], list) else str(out[k])
            name = str(out["name"]).strip()
            if is_skill:
                folder = path.split("/")[-2]
                norm = name.lower()
                if norm != name:
                    changes.append(f"name {name!r} lowercased")
                if folder != norm:
                    changes.append(f"folder {folder!r} renamed to its name")
                name = norm
            elif os.path.basename(path)[:-3] != name:
                changes.append(f"file named after its frontmatter name {name!r}")
            desc, was_cut = cut(str(out["description"]))
            if was_cut:
                changes.append(f"description cut from {len(str(out['description']))} to {len(desc)} characters")
            if is_skill and re.search("[<>]", desc):
                desc = desc.replace("<", "(").replace(">", ")")
                changes.append("'<' '>' in description replaced")
            out["name"], out["description"] = name, desc
            key = ("skill" if is_skill else "agent", name)
            if key in names:
                notes.append(f"- {source}:{path}: skipped ({key[0]} {name} already taken)")
                continue
            names.add(key)
            dest = os.path.join(root, "skills", name, "SKILL.md") if is_skill else \
                os.path.join(root, "agents", name + ".md")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            head = yaml.safe_dump(out, sort_keys=False, allow_unicode=True, width=100000)
            with open(dest, "w", encoding="utf-8", newline="\n") as f:
                f.write("---\n" + head + "---\n" + body)
            if changes:
                notes.append(f"- {source}:{path}: " + "; ".join(changes))
            count += 1
        sources.append(f"| {source} | {url} | {commit} | {lic} | {count} |")
    with open(os.path.join(OUT, "SOURCES.md"), "w") as f:
        f.write("# Sources of the planning-quality catalog\n\n"
                "Assembled by `bench/data/assemble_catalog.py`; each source's licence is in "
                "`<source>/LICENSE`.\n\n| source | repository | commit | licence file | entries |\n"
                "|---|---|---|---|---|\n" + "\n".join(sources) + "\n")
    with open(os.path.join(OUT, "NORMALISED.md"), "w") as f:
        f.write("# Frontmatter normalised for today's importer\n\n"
                "Bodies are unchanged; only these frontmatter edits were made.\n\n"
                + "\n".join(notes) + "\n")


if __name__ == "__main__":
    main()
