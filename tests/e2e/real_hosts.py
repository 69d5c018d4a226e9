#!/usr/bin/env python3
"""The real-host end-to-end suite: the real Claude Code or Codex CLI, with ctx installed by
`ctx hooks install`, against a loopback mock of its model API; checks what reaches the model.

    real_hosts.py --host claude-code|codex --ctx BUILD/ctx --source REPO [--node-prefix DIR]

The CLIs come from the npm prefix scripts/e2e-setup.sh fills (pinned versions; default
$CTX_E2E_PREFIX, else ~/.cache/ctx-e2e/<versions>). Each run happens inside a new network
namespace that has only loopback and a new pid namespace (`unshare -n -p -f --mount-proc`), so
nothing reaches another address and nothing outlives the run. A run that cannot make the
namespace, or a missing CLI, is a failure, never a skip. Exit 0 when every check passed; else 1,
each failed check on one line starting "CHECK FAILED".
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CODEX_VERSION = "0.169.0"
CLAUDE_VERSION = "2.1.332"
PROMPT = "Please add a PDF export of the monthly report to this project"
FOLLOW_UP = "Go on with the PDF export"
AFTER_UNINSTALL = "Summarise the PDF export work"
# Issue 37 item 6: an MCP server (always asked for) and an agent (under preapproved-auto).
MCP_SERVER = "project-notes"
MCP_PROMPT = "Look up the release checklist in the project notes"
MCP_FOLLOW_UP = "Look up the release checklist note again"
AGENT = "code-reviewer"
AGENT_PROMPT = "Review my last change for correctness and security before merging"
IDLE_PROMPT = "Thanks, that is all for today"
SQL_PROMPT = "Now write a reversible postgresql migration that adds an index to the orders table"
RUN_TIMEOUT = 120

failures = []


def check(name, ok, detail=""):
    """Records one named check; a failure prints the check and what was seen instead."""
    if ok:
        print("ok: " + name)
    else:
        failures.append(name)
        print("CHECK FAILED: " + name + (": " + detail if detail else ""))
    return ok


def default_prefix():
    if os.environ.get("CTX_E2E_PREFIX"):
        return os.environ["CTX_E2E_PREFIX"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ctx-e2e", "codex-%s-claude-%s" % (CODEX_VERSION, CLAUDE_VERSION))


def cli_path(prefix, host):
    return os.path.join(prefix, "node_modules", ".bin", "codex" if host == "codex" else "claude")


# ---------------------------------------------------------------- outside the namespace


def outer(args):
    cli = cli_path(args.node_prefix, args.host)
    if not os.access(cli, os.X_OK):
        print("CHECK FAILED: the pinned %s CLI is installed: %s is missing; run "
              "scripts/e2e-setup.sh (npm install of @openai/codex@%s and "
              "@anthropic-ai/claude-code@%s)" % (args.host, cli, CODEX_VERSION, CLAUDE_VERSION))
        return 1
    command = ["unshare", "-n", "-p", "-f", "--mount-proc"]
    if os.geteuid() != 0:
        command.insert(1, "-r")  # an unprivileged user namespace maps us to its root
    command += [sys.executable, os.path.abspath(__file__), "--inner"] + sys.argv[1:]
    probe = subprocess.run(command[: command.index(sys.executable)] + ["true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("CHECK FAILED: a loopback-only network namespace can be made (%s): %s -- the "
              "real-host suite needs root or unprivileged user namespaces"
              % (" ".join(command[: command.index(sys.executable)]), probe.stderr.strip()))
        return 1
    return subprocess.run(command).returncode


# ---------------------------------------------------------------- inside the namespace


def loopback_only():
    """Brings lo up (SIOCGIFFLAGS / SIOCSIFFLAGS) and returns the namespace's interfaces."""
    import fcntl
    import socket
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, 0x8913, request)[:18])[1]
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH", b"lo", flags | 0x1))
    with open("/proc/net/dev") as dev:
        names = [line.split(":")[0].strip() for line in dev.readlines()[2:]]
    return names


def run(command, **kwargs):
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    kwargs.setdefault("timeout", RUN_TIMEOUT)
    result = subprocess.run(command, **kwargs)
    return result


def must(command, **kwargs):
    result = run(command, **kwargs)
    if result.returncode != 0:
        raise RuntimeError("%s exited %d: %s%s" % (" ".join(command), result.returncode,
                                                    result.stdout[-2000:], result.stderr[-2000:]))
    return result


def snapshot(root):
    """Every file and link under root (relative path -> bytes or link target)."""
    state = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                state[rel] = "link -> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    state[rel] = f.read()
            else:
                state[rel] = "dir"
    return state


def snapshot_diff(before, after):
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return ", ".join(changed[:8])


class Scenario:
    def __init__(self, args, mock):
        self.args = args
        self.mock = mock
        self.work = tempfile.mkdtemp(prefix="ctx-e2e-%s-" % args.host, dir=args.work)
        self.home = os.path.join(self.work, "home")
        self.project = os.path.join(self.work, "project")
        # A second project on the same state dir (issue 36: one state dir serves many projects).
        self.project_b = os.path.join(self.work, "project-b")
        self.state = os.path.join(self.work, "state")  # a non-default state dir
        self.key = os.path.join(self.work, "keys", "decision-key.pem")
        for d in (self.home, self.project, self.project_b, os.path.dirname(self.key)):
            os.makedirs(d)
        self.env = {
            # The CLIs' directory first: ctx finds `codex` there for --trust and status.
            "PATH": os.path.dirname(cli_path(args.node_prefix, args.host)) + ":"
                    + os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "LANG": "C.UTF-8",
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
        }
        self.cli = cli_path(args.node_prefix, args.host)

    def ctx(self, *words, **kwargs):
        return must([self.args.ctx] + list(words), env=self.env, **kwargs)

    def prepare(self):
        for project in (self.project, self.project_b):
            git = ["git", "-C", project, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost"]
            must(["git", "init", "-q", project])
            with open(os.path.join(project, "README.md"), "w") as f:
                f.write("# monthly report\n")
            must(git + ["add", "README.md"])
            must(git + ["commit", "-q", "-m", "start"])
        self.ctx("init", "--state", self.state)
        # The example catalog, plus an MCP server the hosts can really start: a stdio server of
        # this suite, run by this Python (absolute paths: the host starts it from the project).
        catalog = os.path.join(self.work, "catalog")
        shutil.copytree(os.path.join(self.args.source, "examples", "catalog"), catalog)
        with open(os.path.join(catalog, "mcp-servers", MCP_SERVER + ".json"), "w") as f:
            json.dump({"name": MCP_SERVER,
                       "description": "Looks up the project's own notes (release checklist, "
                                      "design notes, meeting notes) by title, from a local "
                                      "notes server.",
                       "command": sys.executable,
                       "args": [os.path.join(HERE, "stdio_mcp_server.py")],
                       "tags": ["notes", "project-notes", "checklist"]}, f, indent=2)
        self.ctx("catalog", "import", catalog, "--state", self.state)
        # The user's decision key, trusted for consent in one step (issue 36 item 6): ctx derives
        # the verifier, principal and authenticator from the key itself.
        must(["openssl", "genpkey", "-algorithm", "ed25519", "-out", self.key])
        os.chmod(self.key, 0o600)
        public = os.path.join(self.work, "keys", "decision-key.pub.pem")
        with open(public, "w") as f:
            f.write(must(["openssl", "pkey", "-in", self.key, "-pubout"]).stdout)
        trusted = self.ctx("consent", "trust", "--key", public, "--state", self.state)
        check("ctx consent trust --key trusts the user's public key in one step",
              "trusted SHA256:" in trusted.stdout, trusted.stdout.strip())

    def paste(self, command):
        """Runs a command ctx printed, as the user pastes it into a fresh shell (FILE: their key)."""
        env = dict(self.env)
        env["PATH"] = os.path.dirname(self.args.ctx) + ":" + env["PATH"]
        return must(["sh", "-c", command.replace(" FILE", " " + self.key)], env=env,
                    cwd=self.home)

    def install(self):
        return self.ctx("hooks", "install", self.host_id(), "--project", self.project,
                        "--state", self.state)

    def install_b(self):
        return self.ctx("hooks", "install", self.host_id(), "--project", self.project_b,
                        "--state", self.state)

    def status(self):
        return json.loads(self.ctx("hooks", "status", self.host_id(), "--project", self.project,
                                   "--json").stdout)

    def uninstall(self, project=None):
        return self.ctx("hooks", "uninstall", self.host_id(), "--project", project or self.project)

    def requests_since(self, start):
        return self.mock.requests[start:]


# ---------------------------------------------------------------- Claude Code


class ClaudeCode(Scenario):
    skills_dir = os.path.join(".claude", "skills")
    agents_dir = os.path.join(".claude", "agents")
    agent_ext = ".md"
    mcp_file = ".mcp.json"
    same_turn = True

    def host_id(self):
        return "claude-code"

    def cli_env(self):
        env = dict(self.env)
        env.update({
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % self.mock.port,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-mock",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        })
        return env

    def session(self, prompt, resume=False, cwd=None):
        command = [self.cli, "-p", prompt, "--output-format", "stream-json", "--verbose",
                   "--include-hook-events"]
        if resume:
            command.append("--continue")
        start = len(self.mock.requests)
        result = run(command, cwd=cwd or self.project, env=self.cli_env())
        if result.returncode != 0:
            raise RuntimeError("claude exited %d: %s" % (result.returncode, result.stderr[-2000:]))
        return [r["body"] for r in self.requests_since(start) if "/v1/messages" in r["path"]]

    @staticmethod
    def context_texts(bodies):
        """Every text of the conversation (hook context arrives as system messages in it)."""
        texts = []
        for body in bodies:
            for message in (body or {}).get("messages", []):
                content = message.get("content")
                if isinstance(content, str):
                    texts.append(content)
                    continue
                for block in content or []:
                    if isinstance(block, dict):
                        texts.append(block.get("text") or json.dumps(block))
        return texts

    @staticmethod
    def offered_skills(bodies):
        names = set()
        for text in ClaudeCode.context_texts(bodies):
            at = text.find("The following skills are available for use with the Skill tool")
            if at < 0:
                continue
            for line in text[at:].splitlines()[1:]:
                m = re.match(r"- ([a-z0-9-]+)(?: \(([a-z0-9-]+)\))?:", line)
                if m:
                    names.add(m.group(2) or m.group(1))
        return names


    @staticmethod
    def mcp_tools(bodies):
        """MCP tools offered, as "server/tool": Claude Code names each `mcp__<server>__<tool>`
        (listed among its deferred tools)."""
        found = set()
        for body in bodies:
            for text in strings(body):
                for m in re.finditer(r"mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_-]+)", text):
                    found.add(m.group(1) + "/" + m.group(2))
        return found

    @staticmethod
    def agents(bodies):
        """Agent types the Agent tool offers ("Available agent types for the Agent tool:")."""
        return listed(bodies, "Available agent types for the Agent tool", r"^- ([a-z0-9-]+):")


# ---------------------------------------------------------------- Codex


class Codex(Scenario):
    skills_dir = os.path.join(".agents", "skills")
    agents_dir = os.path.join(".codex", "agents")
    agent_ext = ".toml"
    mcp_file = os.path.join(".codex", "config.toml")
    same_turn = False  # a skill made during a turn is offered from the next session or resume

    def host_id(self):
        return "codex"

    def __init__(self, args, mock):
        super().__init__(args, mock)
        self.codex_home = os.path.join(self.home, ".codex")
        os.makedirs(self.codex_home)
        self.env["CODEX_HOME"] = self.codex_home
        # The user trusts the project (what `codex exec --trust` or the TUI's prompt writes):
        # Codex loads a project's .codex/ layer only then.
        with open(os.path.join(self.codex_home, "config.toml"), "w") as f:
            for project in (self.project, self.project_b):
                f.write('[projects."%s"]\ntrust_level = "trusted"\n' % project)

    def install(self):
        # Without --trust: ctx says how to trust, status says untrusted, Codex skips the hooks.
        first = super().install()
        check("install without --trust says how to trust ctx's hooks",
              "--trust" in first.stdout and "/hooks" in first.stdout, first.stdout.strip())
        status = self.status()
        check("status: installed, untrusted, the state dir, the project trusted",
              status.get("installed") is True and status.get("trusted") is False
              and status.get("state_dir") == self.state and status.get("project_trusted") is True,
              json.dumps(status))
        texts = self.context_texts(self.session(PROMPT))
        check("Codex does not run untrusted ctx hooks", not ctx_traces(texts),
              "seen: %r" % ctx_traces(texts)[:1])
        trusted = self.ctx("hooks", "install", "codex", "--project", self.project, "--state",
                           self.state, "--trust")
        check("install --trust says it trusted ctx's hooks",
              "trusted ctx's" in trusted.stdout, trusted.stdout.strip())
        status = self.status()
        check("status after --trust: trusted", status.get("trusted") is True, json.dumps(status))
        return trusted

    def provider_args(self):
        base = "http://127.0.0.1:%d/v1" % self.mock.port
        return ["-c", "model_provider=e2e", "-c", "model_providers.e2e.name=e2e",
                "-c", "model_providers.e2e.base_url=" + base,
                "-c", "model_providers.e2e.wire_api=responses", "-c", "model=gpt-5.4"]

    def install_b(self):
        return self.ctx("hooks", "install", "codex", "--project", self.project_b, "--state",
                        self.state, "--trust")

    def session(self, prompt, resume=False, extra=(), cwd=None):
        command = [self.cli, "exec"]
        if resume:
            command += ["resume", "--last"]
        command += ["--json"] + self.provider_args() + list(extra) + [prompt]
        start = len(self.mock.requests)
        result = run(command, cwd=cwd or self.project, env=self.env)
        if result.returncode != 0:
            raise RuntimeError("codex exited %d: %s" % (result.returncode, result.stderr[-2000:]))
        return [r["body"] for r in self.requests_since(start) if r["path"].endswith("/responses")]

    @staticmethod
    def context_texts(bodies):
        texts = []
        for body in bodies:
            for item in (body or {}).get("input", []):
                for block in item.get("content") or []:
                    if isinstance(block, dict) and "text" in block:
                        texts.append(block["text"])
        return texts

    @staticmethod
    def offered_skills(bodies):
        names = set()
        for text in Codex.context_texts(bodies):
            if "<skills_instructions>" not in text:
                continue
            for m in re.finditer(r"- ([a-z0-9-]+): .*?\(file: ([^)]*)\)", text):
                names.add(m.group(1))
        return names


    @staticmethod
    def mcp_tools(bodies):
        """MCP tools offered, as "server/tool": Codex offers a namespace `mcp__<server>` (a `-`
        in the server's name becomes `_`) whose tools are the server's."""
        found = set()
        for body in bodies:
            for tool in (body or {}).get("tools") or []:
                name = tool.get("name") or ""
                if tool.get("type") == "namespace" and name.startswith("mcp__"):
                    for inner in tool.get("tools") or []:
                        found.add(name[len("mcp__"):].replace("_", "-") + "/" + inner["name"])
        return found

    @staticmethod
    def agents(bodies):
        """Agent roles the multi-agent tool offers ("Available roles:")."""
        return listed(bodies, "Available roles:", r"^([a-z0-9_-]+): \{")


def listed(bodies, heading, item):
    """The names `item` (a regex, one group) matches on the lines of the list that follows
    `heading` in any string of the request bodies (the list ends at a blank line)."""
    found = set()
    for body in bodies:
        for text in strings(body):
            at = text.find(heading)
            if at >= 0:
                found.update(re.findall(item, text[at:].split("\n\n", 1)[0], re.M))
    return found


def strings(value):
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# ---------------------------------------------------------------- the flow


ANY_CONSENT = re.compile(r"ctx needs the user's consent to install ([a-z0-9-]+) \(([a-z-]+)\)\. "
                         r"The user approves it in their own terminal with: ctx consent approve "
                         r"([0-9a-f]{64})")
CONSENT = re.compile(r"ctx needs the user's consent to install ([a-z0-9-]+) \(skill\)\. The user "
                     r"approves it in their own terminal with: (ctx consent approve ([0-9a-f]{64})"
                     r" --key FILE[^(]*?) \(or declines")


def ctx_traces(texts):
    return [t for t in texts if "ctx recommends" in t or "ctx consent" in t or "ctx installed" in t]


def flow(scenario):
    scenario.prepare()
    before = snapshot(scenario.project)
    codex_config = os.path.join(scenario.home, ".codex", "config.toml")
    config_before = open(codex_config, "rb").read() if os.path.exists(codex_config) else None
    installed = scenario.install()
    print("ctx hooks install: " + installed.stdout.strip().replace("\n", " | "))

    # 1. The prompt: the recommendation and the approve command reach the model. Claude Code
    # picks up a skill written during a turn (its skills folder existed at start): there the user
    # approves while the first request is answered, and the mock waits for Claude Code's watcher
    # before it asks for one tool call; the request after it must offer the skill.
    approved = {}

    def approve_in_turn(api, body):
        if approved or not scenario.same_turn:
            return None
        found = CONSENT.search("\n".join(scenario.context_texts([body])))
        if found is None:
            return None
        # The approve command exactly as the reply printed it, pasted into a fresh shell.
        scenario.paste(found.group(2))
        approved["at"] = len(scenario.mock.requests)
        time.sleep(4)  # Claude Code notices a new skill about 3 s after it is written
        return {"tool": {"name": "Read",
                         "input": {"file_path": os.path.join(scenario.project, "README.md")}}}

    scenario.mock.on_request = approve_in_turn
    start = len(scenario.mock.requests)
    bodies = scenario.session(PROMPT)
    scenario.mock.on_request = None
    texts = scenario.context_texts(bodies)
    check("a model request was made for the prompt", bool(bodies), "no request reached the mock")
    joined = "\n".join(texts)
    check("the recommendation reaches the model (\"ctx recommends: ...\")",
          "ctx recommends:" in joined,
          "no request text contains it; hook context seen: %r" % ctx_traces(texts)[:2])
    consent = CONSENT.search(joined)
    check("the consent request and its approve command reach the model",
          consent is not None, "no \"ctx consent approve <digest>\" in any request")
    if consent is None:
        return
    skill, digest = consent.group(1), consent.group(3)
    check("the printed approve command carries the non-default state dir",
          ("--state " + scenario.state) in consent.group(2), consent.group(2))
    first = bodies[:1]
    check("the skill is not offered before it is approved",
          skill not in scenario.offered_skills(first),
          "%s offered already: %s" % (skill, sorted(scenario.offered_skills(first))))

    # 2. The user approves in their own terminal; the skill is offered in the same turn (Claude
    # Code) and in the next one (both).
    if scenario.same_turn:
        later = [r["body"] for r in scenario.mock.requests[approved.get("at", start):]
                 if "/v1/messages" in r["path"] and (r["body"] or {}).get("tools")]
        offered = scenario.offered_skills(later)
        check("the skill %s approved during the turn is offered in that turn" % skill,
              bool(approved) and skill in offered,
              "approved: %s; offered after it: %s" % (bool(approved), sorted(offered)))
    else:
        scenario.paste(consent.group(2))
    # The next turn: with Claude Code the skill may come back during it (a SessionEnd released
    # it and the prompt's hook activates it again), so its first answer waits for the watcher
    # too and is one tool call.
    paused = {}

    def pause_once(api, body):
        if paused or not scenario.same_turn:
            return None
        paused["done"] = True
        time.sleep(4)
        return {"tool": {"name": "Read",
                         "input": {"file_path": os.path.join(scenario.project, "README.md")}}}

    scenario.mock.on_request = pause_once
    bodies = scenario.session(FOLLOW_UP, resume=True)
    scenario.mock.on_request = None
    offered = scenario.offered_skills(bodies)
    check("the approved skill %s is offered in the next turn" % skill, skill in offered,
          "offered: %s" % sorted(offered))
    # Consent once (issue 36 item 2): the install the user approved is not asked for again (a
    # resumed conversation still carries the first request, with the digest approved above).
    asked_again = [t for t in scenario.context_texts(bodies)
                   if any(m.group(1) == skill and m.group(3) != digest
                          for m in CONSENT.finditer(t))]
    check("the next turn is not asked to consent to %s again" % skill, not asked_again,
          "asked: %r" % asked_again[:1])
    # The lifecycle (issue 36): each session's SessionEnd (both hosts fire it when a run ends)
    # releases the session's hold, but the project's recent prompts wanted the skill, so it stays
    # in the project's skills folder for the next session.
    folder = os.path.join(scenario.project, scenario.skills_dir, skill)
    check("after the sessions ended, %s stays in the project's skills folder" % skill,
          os.path.isfile(os.path.join(folder, "SKILL.md")), "no " + folder)

    second_project(scenario, skill)
    mcp_and_agent(scenario)

    # 3. Uninstall: the project's files as before, and nothing of ctx's reaches the model.
    removed = scenario.uninstall()
    print("ctx hooks uninstall: " + removed.stdout.strip().replace("\n", " | "))
    after = snapshot(scenario.project)
    check("after uninstall the project's files are as before install", after == before,
          "differs: " + snapshot_diff(before, after))
    if config_before is not None:
        config_after = open(codex_config, "rb").read()
        check("after uninstall Codex's config.toml is as before install",
              config_after == config_before,
              "before %r, after %r" % (config_before[:200], config_after[:200]))
    bodies = scenario.session(AFTER_UNINSTALL)
    texts = scenario.context_texts(bodies)
    check("after uninstall no ctx hook reply reaches the model", not ctx_traces(texts),
          "seen: %r" % ctx_traces(texts)[:1])
    check("after uninstall the skill %s is not offered" % skill,
          skill not in scenario.offered_skills(bodies),
          "offered: %s" % sorted(scenario.offered_skills(bodies)))


def second_project(scenario, skill):
    """Issue 36 on the real hosts: a second project on the same state dir gets the approved
    skill without a new consent (consent is for the install, once) in its own skills folder,
    never by a write into the first project's; a new prompt about other work in the same session
    gets a plan for that work, not the previous prompt's."""
    before = snapshot(scenario.project_b)
    folder_a = os.path.join(scenario.project, scenario.skills_dir, skill)
    a_before = snapshot(folder_a)
    scenario.install_b()
    bodies = scenario.session(PROMPT, cwd=scenario.project_b)
    texts = scenario.context_texts(bodies)
    check("in a second project the approved %s is installed without a consent request" % skill,
          any("ctx installed:" in t and skill + " (skill)" in t for t in texts)
          and not any(m.group(1) == skill for m in CONSENT.finditer("\n".join(texts))),
          "hook context seen: %r" % ctx_traces(texts)[:2])
    folder_b = os.path.join(scenario.project_b, scenario.skills_dir, skill)
    check("it is activated in the second project's own skills folder",
          os.path.isfile(os.path.join(folder_b, "SKILL.md")), "no " + folder_b)
    check("the first project's skills folder is untouched by the second project's session",
          snapshot(folder_a) == a_before, "differs: " + snapshot_diff(a_before, snapshot(folder_a)))
    bodies = scenario.session(SQL_PROMPT, resume=True, cwd=scenario.project_b)
    texts = [t for t in scenario.context_texts(bodies) if "ctx recommends:" in t]
    latest = texts[-1] if texts else ""
    check("a new prompt about other work gets that work's plan, not the previous prompt's",
          "sql-migrations (skill)" in latest and "pdf-export" not in latest.split("\n")[0],
          "latest ctx context: %r" % latest[:300])
    scenario.uninstall(scenario.project_b)
    after = snapshot(scenario.project_b)
    check("after uninstall the second project's files are as before install", after == before,
          "differs: " + snapshot_diff(before, after))


def mcp_and_agent(scenario):
    """Issue 37 item 6: an MCP server approved by the user appears to the model as a tool
    namespace, an agent installed under preapproved-auto among the host's agents; after the
    project's prompts stop wanting them (the deactivation rule), neither."""
    tool = MCP_SERVER + "/lookup_note"
    bodies = scenario.session(MCP_PROMPT)
    texts = scenario.context_texts(bodies)
    asked = [m for m in ANY_CONSENT.finditer("\n".join(texts)) if m.group(1) == MCP_SERVER]
    check("the consent request for %s (mcp-server) reaches the model" % MCP_SERVER,
          bool(asked) and asked[0].group(2) == "mcp-server",
          "hook context seen: %r" % ctx_traces(texts)[:2])
    check("%s is not a tool of the host before it is approved" % MCP_SERVER,
          tool not in scenario.mcp_tools(bodies), sorted(scenario.mcp_tools(bodies)))
    if not asked:
        return
    shown = scenario.ctx("consent", "show", "--state", scenario.state).stdout
    check("ctx consent show names the command line the MCP server adds",
          os.path.join(HERE, "stdio_mcp_server.py") in shown, shown[-600:])
    scenario.ctx("consent", "approve", asked[0].group(3), "--key", scenario.key, "--state",
                 scenario.state)
    config = os.path.join(scenario.project, scenario.mcp_file)
    check("after approval the project's %s names %s" % (scenario.mcp_file, MCP_SERVER),
          os.path.isfile(config) and MCP_SERVER in open(config).read(), "no entry in " + config)
    bodies = scenario.session(MCP_FOLLOW_UP)
    check("after approval the next session offers the MCP tool %s" % tool,
          tool in scenario.mcp_tools(bodies), "offered: %s" % sorted(scenario.mcp_tools(bodies)))

    # The agent: agents under preapproved-auto install without a consent request.
    scenario.ctx("policy", "set", "agent", "preapproved-auto", "--state", scenario.state)
    bodies = scenario.session(AGENT_PROMPT)
    texts = scenario.context_texts(bodies)
    check("the agent %s is installed without a consent request (\"ctx installed: ...\")" % AGENT,
          any("ctx installed:" in t and AGENT + " (agent)" in t for t in texts),
          "hook context seen: %r" % ctx_traces(texts)[:2])
    agent_file = os.path.join(scenario.project, scenario.agents_dir, AGENT + scenario.agent_ext)
    check("the agent file %s is written" % os.path.join(scenario.agents_dir,
                                                        AGENT + scenario.agent_ext),
          os.path.isfile(agent_file), "no " + agent_file)
    bodies = scenario.session(AGENT_PROMPT)  # a resumed session replays its first agent list
    check("the next session offers the agent %s among the host's agents" % AGENT,
          AGENT in scenario.agents(bodies), "agents: %s" % sorted(scenario.agents(bodies)))

    # The deactivation rule: none of the project's last 3 prompts wants them, no session holds
    # them (each run's SessionEnd released it): the third such prompt removes them.
    said = []
    for _ in range(3):
        said += [t for t in scenario.context_texts(scenario.session(IDLE_PROMPT))
                 if "ctx deactivated:" in t]
    said = [line for t in said for line in t.splitlines() if "ctx deactivated:" in line]
    check("the prompts say ctx deactivated the MCP server and the agent",
          any(MCP_SERVER + " (mcp-server)" in t for t in said)
          and any(AGENT + " (agent)" in t for t in said), "said: %r" % said)
    check("after deactivation the agent file is gone", not os.path.exists(agent_file), agent_file)
    check("after deactivation %s no longer names %s" % (scenario.mcp_file, MCP_SERVER),
          not os.path.isfile(config) or MCP_SERVER not in open(config).read(), config)
    bodies = scenario.session(MCP_FOLLOW_UP)
    check("after deactivation the next session offers neither the MCP tool nor the agent",
          tool not in scenario.mcp_tools(bodies) and AGENT not in scenario.agents(bodies),
          "tools %s, agents %s" % (sorted(scenario.mcp_tools(bodies)),
                                   sorted(scenario.agents(bodies))))


def inner(args):
    interfaces = loopback_only()
    if not check("the namespace has only loopback", interfaces == ["lo"], "interfaces %s"
                 % interfaces):
        return 1
    from mock_models import MockModels
    mock = MockModels()
    mock.serve()
    scenario = (Codex if args.host == "codex" else ClaudeCode)(args, mock)
    started = time.monotonic()
    try:
        flow(scenario)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        check("the flow runs to its end", False, str(error))
    finally:
        mock.close()
        if args.keep:
            print("kept " + scenario.work)
        else:
            shutil.rmtree(scenario.work, ignore_errors=True)
    print("%s: %d checks failed, %.1f s" % (args.host, len(failures), time.monotonic() - started))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", choices=["claude-code", "codex"], required=True)
    parser.add_argument("--ctx", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--node-prefix", default=default_prefix())
    parser.add_argument("--work", default=None, help="parent of the run's temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.ctx = os.path.abspath(args.ctx)
    args.source = os.path.abspath(args.source)
    args.node_prefix = os.path.abspath(args.node_prefix)
    return inner(args) if args.inner else outer(args)


if __name__ == "__main__":
    sys.exit(main())
