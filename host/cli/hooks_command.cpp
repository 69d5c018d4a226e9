#include "host/cli/hooks_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string_view>

#include "host/app/state_service.hpp"
#include "host/app/wire.hpp"
#include "host/cli/codex_app_server.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"

namespace ctx::cli {

namespace fs = std::filesystem;
namespace hk = ctx::runtime::hooks;

namespace {

// The executable the hooks run: the first absolute `ctx` on $PATH that is this very binary, as
// the user reaches it (a package manager's link such as /usr/local/bin/ctx or a profile's bin/
// survives upgrades; the versioned file it points at may not), else this binary's own path.
fs::path this_executable(const Environment& env) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  if (!env.path) return self;
  std::string_view rest = *env.path;
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const fs::path dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (!dir.is_absolute()) continue;
    std::error_code ec;
    if (fs::equivalent(dir / "ctx", self, ec) && !ec) return dir / "ctx";
  }
  return self;
}

// Where one `ctx hooks` command acts.
struct Where {
  hk::HookScope scope = hk::HookScope::kProject;
  fs::path home;
  fs::path project;  // project scope only
  std::optional<fs::path> claude_config_dir;
  fs::path codex_dir;  // $CODEX_HOME, else ~/.codex
  hk::HookTarget target;

  fs::path codex_config() const { return codex_dir / "config.toml"; }
  // The directory the host loads this scope's skills from (the adapters' install_locations).
  fs::path skills_dir(hk::HookHost host) const {
    if (host == hk::HookHost::kClaudeCode) {
      if (scope == hk::HookScope::kUser && claude_config_dir) return *claude_config_dir / "skills";
      return (scope == hk::HookScope::kUser ? home : project) / ".claude" / "skills";
    }
    return (scope == hk::HookScope::kUser ? home : project) / ".agents" / "skills";
  }
  // Where Codex is asked about hooks: the project, or the home directory.
  fs::path codex_cwd() const { return scope == hk::HookScope::kUser ? home : project; }
};

Where where_of(const HooksOptions& options, const Environment& env) {
  Where where;
  where.scope = options.user ? hk::HookScope::kUser : hk::HookScope::kProject;
  where.home = env.home ? fs::path(*env.home) : fs::path();
  if (where.scope == hk::HookScope::kProject) {
    where.project = fs::absolute(options.project.value_or(fs::current_path())).lexically_normal();
    if (where.project.has_filename() == false) where.project = where.project.parent_path();
  }
  const std::optional<fs::path> codex_home =
      env.codex_home ? std::optional<fs::path>(*env.codex_home) : std::nullopt;
  where.codex_dir = codex_home && codex_home->is_absolute() ? *codex_home : where.home / ".codex";
  // Claude Code run with $CLAUDE_CONFIG_DIR reads its user settings, and loads user skills,
  // there instead of ~/.claude.
  if (options.host == hk::HookHost::kClaudeCode && env.claude_config_dir &&
      fs::path(*env.claude_config_dir).is_absolute()) {
    where.claude_config_dir = fs::path(*env.claude_config_dir);
  }
  where.target = hk::hook_target(options.host, where.scope, where.home, where.project, codex_home,
                                 where.claude_config_dir);
  return where;
}

// ctx's hooks among those Codex lists: a ctx command from the target's file.
std::vector<CodexHook> ctx_codex_hooks(const CodexHookList& list, const Where& where) {
  std::vector<CodexHook> ours;
  const fs::path resolved = hk::read_installed_hooks(where.target).file;
  for (const CodexHook& hook : list.hooks) {
    const fs::path source(hook.source_path);
    if ((source == where.target.file || source == resolved) &&
        hk::is_ctx_hook_command(hook.command, hk::HookHost::kCodex)) {
      ours.push_back(hook);
    }
  }
  return ours;
}

std::string project_trust_hint(const Where& where) {
  return "Codex loads " + (where.project / ".codex").string() +
         " only in a project it trusts: run `codex exec --trust` once in " +
         where.project.string() + ", or accept Codex's trust prompt there";
}

std::string trust_hint(const Where& where) {
  std::string command = "ctx hooks install codex ";
  command += where.scope == hk::HookScope::kUser ? "--user" : "--project " + where.project.string();
  return "Codex skips hooks it has not trusted, without a message: run `" + command +
         " --trust` (ctx asks `codex app-server` to trust exactly its own hooks, as /hooks does), "
         "or review them in /hooks in the Codex TUI";
}

// Trusts ctx's hooks through `codex app-server`; returns how many it trusted now and in all.
std::pair<std::size_t, std::size_t> trust_ctx_hooks(const HooksOptions& options,
                                                    const Environment& env, const Where& where,
                                                    bool project_trusted) {
  const fs::path codex = find_codex(options.codex, env.path);
  CodexAppServer server(codex, where.codex_cwd());
  const std::vector<CodexHook> ours =
      ctx_codex_hooks(list_codex_hooks(server, where.codex_cwd()), where);
  if (ours.empty()) {
    throw FailedPrecondition("Codex does not load ctx's hooks from " + where.target.file.string() +
                             (where.scope == hk::HookScope::kProject && !project_trusted
                                  ? ": " + project_trust_hint(where)
                                  : std::string()));
  }
  std::vector<CodexHook> untrusted;
  for (const CodexHook& hook : ours) {
    if (hook.trust_status != "trusted" && hook.trust_status != "managed") untrusted.push_back(hook);
  }
  if (untrusted.empty()) return {0, ours.size()};
  hk::save_codex_config_backup(where.codex_config());
  trust_codex_hooks(server, untrusted);
  for (const CodexHook& hook :
       ctx_codex_hooks(list_codex_hooks(server, where.codex_cwd()), where)) {
    if (hook.trust_status != "trusted" && hook.trust_status != "managed") {
      throw FailedPrecondition("Codex still reports ctx's hook " + hook.key + " as " +
                               hook.trust_status + " after trusting it");
    }
  }
  return {untrusted.size(), ours.size()};
}

// Where what the user approves activates for `target`, by kind: skills always; agents and MCP
// servers where the host's adapter names their places (not the generic adapter).
std::string activates_line(const runtime::ActivationTarget& target, std::string_view how) {
  std::string line =
      "skills you approve " + std::string(how) + "activate in " + target.skills_dir.string();
  if (!target.agents_dir.empty()) line += ", agents in " + target.agents_dir.string();
  if (!target.mcp_file.empty()) line += ", MCP servers in " + target.mcp_file.string();
  return line;
}

// Removes the activation links of `state` (symlinks into <state>/skills/) from `skills_dir`.
std::vector<std::string> remove_activation_links(const fs::path& skills_dir,
                                                 const fs::path& state) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(skills_dir, ec))) return removed;
  const std::string objects =
      runtime::StatePaths::of(state).skills.lexically_normal().string() + "/";
  for (const fs::directory_entry& entry : fs::directory_iterator(skills_dir, ec)) {
    if (!entry.is_symlink(ec)) continue;
    const fs::path link = fs::read_symlink(entry.path(), ec);
    if (ec || link.lexically_normal().string().rfind(objects, 0) != 0) continue;
    if (::unlink(entry.path().c_str()) == 0) removed.push_back(entry.path().filename().string());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

// Removes `dir` and then its parent while they are empty, up to (not including) `stop`.
void remove_empty_dirs(fs::path dir, const fs::path& stop) {
  std::error_code ec;
  while (!dir.empty() && dir != stop && dir.parent_path() != dir &&
         fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_empty(dir, ec) && !ec) {
    if (!fs::remove(dir, ec) || ec) return;
    dir = dir.parent_path();
  }
}

std::optional<fs::path> state_dir_of(const hk::InstalledHooks& installed, const Environment& env) {
  if (installed.state_dir) return installed.state_dir;
  try {
    return default_state_dir(env);
  } catch (const Error&) {
    return std::nullopt;
  }
}

int run_install(const HooksOptions& options, const CommandIo& io, const Where& where) {
  std::ostream& out = io.out;
  const Environment& env = io.env;
  const std::string host(hk::host_name(options.host));
  const bool codex = options.host == hk::HookHost::kCodex;
  const bool user = options.user;
  if (options.trust && !codex) {
    throw InvalidArgument("--trust is for codex (Claude Code has no per-hook trust)");
  }
  hk::HookCommand command;
  command.executable = this_executable(env);
  if (options.state) command.state_dir = fs::absolute(*options.state);
  const hk::HooksChange change = hk::install_hooks(where.target, command);

  // The state dir's installed skills activate where that host looks for the project's skills
  // (--project) or the user's (--user), when the state dir is initialised and the host's adapter
  // is pinned.
  std::optional<runtime::ActivationTarget> activation;
  if (!user || env.home) {
    try {
      const fs::path state = options.state ? fs::absolute(*options.state) : default_state_dir(env);
      activation = runtime::set_activation_target(
          state, host, user ? where.home : where.project,
          user ? runtime::ActivationScope::kUser : runtime::ActivationScope::kProject,
          where.claude_config_dir);
    } catch (const NotFound&) {
    } catch (const InvalidArgument&) {
    }
    // The skills directory exists before the host starts: Claude Code watches a top-level
    // skills directory for new skills only if it existed at startup, so a skill approved
    // mid-session then works in that session.
    std::error_code ignored;
    if (activation) fs::create_directories(activation->skills_dir, ignored);
  }

  bool project_trusted = true;
  std::optional<std::pair<std::size_t, std::size_t>> trusted;
  if (codex) {
    if (!user) {
      project_trusted =
          hk::codex_project_trusted(hk::read_codex_config(where.codex_config()), where.project);
    }
    if (options.trust) trusted = trust_ctx_hooks(options, env, where, project_trusted);
  }

  if (options.json) {
    runtime::HooksInstallReport report{host, change, activation, std::nullopt, trusted};
    if (codex && !user) report.project_trusted = project_trusted;
    out << core::canonical_json(runtime::hooks_install_json(report)) << "\n";
    return kExitOk;
  }
  const std::string file = change.file.string();
  if (change.changed) {
    out << "installed ctx hooks for " << host << " in " << file << " (" << change.events.size()
        << (change.created
                ? " events; ctx created the file: uninstall removes it)\n"
                : " events; previous content saved in " + change.backup->string() + ")\n");
  } else {
    out << "ctx hooks for " << host << " are already installed in " << file << "\n";
  }
  if (!codex) {
    out << change.notice << "\n";
  } else if (trusted) {
    out << "trusted ctx's " << trusted->second << " hooks in Codex (" << trusted->first
        << " newly, in " << where.codex_config().string()
        << " hooks.state, as /hooks does; uninstall removes them)\n";
  } else {
    out << trust_hint(where) << "\n";
  }
  if (codex && !project_trusted) out << project_trust_hint(where) << "\n";
  if (activation) out << activates_line(*activation, "(ctx consent approve) ") << "\n";
  return kExitOk;
}

int run_uninstall(const HooksOptions& options, const CommandIo& io, const Where& where) {
  std::ostream& out = io.out;
  const std::string host(hk::host_name(options.host));
  const hk::InstalledHooks installed = hk::read_installed_hooks(where.target);
  const std::optional<fs::path> state = state_dir_of(installed, io.env);
  const hk::HooksChange change = hk::uninstall_hooks(where.target);
  hk::TrustRemoval trust;
  if (options.host == hk::HookHost::kCodex && !installed.trust_keys.empty()) {
    trust = hk::remove_codex_trust(where.codex_config(), installed.trust_keys);
  }
  std::vector<std::string> links;
  const fs::path skills = where.skills_dir(options.host);
  if (state && !installed.events.empty()) links = remove_activation_links(skills, *state);
  // The state dir no longer activates this scope's capabilities here (hooks install recorded it).
  // The agents folder the agent installer made there goes too once empty (what it activated
  // left with its deactivation; another file in it is the user's and keeps it).
  bool target_removed = false;
  std::optional<fs::path> agents_dir;
  if (state && fs::is_directory(*state) && where.scope == hk::HookScope::kProject) {
    for (const auto& target : runtime::read_activation_targets(*state)) {
      if (target.adapter == host && target.scope == runtime::ActivationScope::kProject &&
          target.project_dir == where.project && !target.agents_dir.empty()) {
        agents_dir = target.agents_dir;
      }
    }
  }
  if (state && fs::is_directory(*state)) {
    target_removed = runtime::forget_activation_target(
        *state, host, where.scope == hk::HookScope::kUser ? where.home : where.project,
        where.scope == hk::HookScope::kUser ? runtime::ActivationScope::kUser
                                            : runtime::ActivationScope::kProject);
  }
  if (where.scope == hk::HookScope::kProject) {
    // What install made in the project and is now empty: the skills directory, the host's
    // directory that held it and the hook file.
    remove_empty_dirs(skills, where.project);
    if (agents_dir) remove_empty_dirs(*agents_dir, where.project);
    remove_empty_dirs(change.file.parent_path(), where.project);
  }
  if (options.json) {
    runtime::HooksUninstallReport report{host, change, links, target_removed, std::nullopt};
    if (options.host == hk::HookHost::kCodex) report.codex_trust = {trust.removed, trust.restored};
    out << core::canonical_json(runtime::hooks_uninstall_json(report)) << "\n";
    return kExitOk;
  }
  const std::string file = change.file.string();
  if (change.changed) {
    out << "removed ctx hooks for " << host << " from " << file
        << (change.restored ? " (its content before install is back; backup deleted)"
            : change.backup ? " (edited since install: previous content saved in " +
                                  change.backup->string() + ")"
                            : "")
        << "\n";
  } else {
    out << "no ctx hooks for " << host << " in " << file << "\n";
  }
  if (trust.removed != 0) {
    out << "removed ctx's " << trust.removed << " trust entries from "
        << where.codex_config().string()
        << (trust.restored ? " (its content before ctx trusted them is back)" : "") << "\n";
  }
  if (target_removed) {
    out << "the state dir " << state->string() << " no longer activates capabilities for "
        << (where.scope == hk::HookScope::kUser ? "the user" : where.project.string()) << "\n";
  }
  if (!links.empty()) {
    out << "removed the activation links of ctx's skills from " << skills.string() << ":";
    for (const std::string& name : links) out << " " << name;
    out << "\n";
  }
  return kExitOk;
}

int run_status(const HooksOptions& options, const CommandIo& io, const Where& where) {
  std::ostream& out = io.out;
  const Environment& env = io.env;
  const std::string host(hk::host_name(options.host));
  const bool codex = options.host == hk::HookHost::kCodex;
  const hk::InstalledHooks installed = hk::read_installed_hooks(where.target);
  const std::size_t wanted = hk::installed_events(options.host).size();
  const bool is_installed = installed.missing.empty();
  const std::optional<fs::path> state = state_dir_of(installed, env);
  std::optional<runtime::ActivationTarget> activation;
  if (state) {
    try {
      // The target a session in this scope's directory gets (a project's, else the user's).
      const fs::path dir = where.scope == hk::HookScope::kUser ? where.home : where.project;
      if (const auto target = runtime::find_activation_target(
              runtime::read_activation_targets(*state), host, dir)) {
        activation = target;
      }
    } catch (const Error&) {
    }
  }
  std::optional<bool> project_trusted;
  std::optional<std::string> trust_unknown;
  std::size_t trusted_count = 0;
  std::size_t listed = 0;
  if (codex) {
    if (where.scope == hk::HookScope::kProject) {
      project_trusted =
          hk::codex_project_trusted(hk::read_codex_config(where.codex_config()), where.project);
    }
    if (!installed.events.empty()) {
      try {
        CodexAppServer server(find_codex(options.codex, env.path), where.codex_cwd());
        for (const CodexHook& hook :
             ctx_codex_hooks(list_codex_hooks(server, where.codex_cwd()), where)) {
          ++listed;
          if (hook.trust_status == "trusted" || hook.trust_status == "managed") ++trusted_count;
        }
      } catch (const NotFound& error) {
        trust_unknown = error.what();
      } catch (const FailedPrecondition& error) {
        trust_unknown = error.what();
      }
      if (!trust_unknown && listed == 0) {
        trust_unknown = "Codex does not load ctx's hooks from " + where.target.file.string();
      }
    }
  }
  // Codex: whether every ctx hook it lists is trusted; unknown when it could not be asked or
  // nothing is installed.
  const std::optional<bool> trusted =
      !codex || trust_unknown || installed.events.empty()
          ? std::nullopt
          : std::optional<bool>(trusted_count == listed && listed == installed.trust_keys.size());
  if (options.json) {
    const runtime::HooksStatusReport report{host,  installed,       state,   activation,
                                            codex, project_trusted, trusted, trust_unknown};
    out << core::canonical_json(runtime::hooks_status_json(report)) << "\n";
    return kExitOk;
  }
  out << host << " hooks in " << installed.file.string() << ": ";
  if (installed.events.empty()) {
    out << "not installed (ctx hooks install " << host << ")\n";
  } else if (is_installed) {
    out << "installed (" << installed.events.size() << " events)\n";
  } else {
    out << "partly installed (" << installed.events.size() << " of " << wanted
        << " events; run ctx hooks install " << host << " again)\n";
  }
  if (state) {
    out << "state dir: " << state->string()
        << (installed.state_dir ? "" : " (the default: the hooks name no --state)") << "\n";
  }
  if (activation) out << activates_line(*activation, "") << "\n";
  if (codex) {
    if (!installed.events.empty()) {
      if (trust_unknown) {
        out << "trusted: unknown (" << *trust_unknown << ")\n";
      } else if (trusted == true) {
        out << "trusted: yes (all " << listed << " ctx hooks)\n";
      } else {
        out << "trusted: no (" << trusted_count << " of " << installed.trust_keys.size()
            << " ctx hooks); " << trust_hint(where) << "\n";
      }
    }
    if (project_trusted) {
      out << "project trusted: " << (*project_trusted ? "yes" : "no; " + project_trust_hint(where))
          << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

int run_hooks(const HooksOptions& options, const CommandIo& io) {
  const Where where = where_of(options, io.env);
  switch (options.action) {
    case HooksAction::kInstall:
      return run_install(options, io, where);
    case HooksAction::kUninstall:
      return run_uninstall(options, io, where);
    case HooksAction::kStatus:
      return run_status(options, io, where);
  }
  return kExitUsage;
}

std::string hooks_usage() {
  return "  ctx hooks install claude-code|codex [--project DIR | --user] [--state DIR]\n"
         "                  [--trust [--codex PATH]] [--json]\n"
         "      add `ctx hook <host>` to the host's hook configuration (.claude/settings.json,\n"
         "      .codex/hooks.json); idempotent, other settings kept, backup in <file>.ctx-backup;\n"
         "      with --project, approved skills then activate in that project's skills dir;\n"
         "      codex --trust: have `codex app-server` trust ctx's hooks, as /hooks does\n"
         "  ctx hooks uninstall claude-code|codex [--project DIR | --user] [--json]\n"
         "      remove what install made: the handlers (the file's bytes back, backup deleted),\n"
         "      Codex trust entries, activation links, directories left empty\n"
         "  ctx hooks status claude-code|codex [--project DIR | --user] [--codex PATH] [--json]\n"
         "      installed, trusted (Codex), which state dir, project trusted (Codex)\n";
}

}  // namespace ctx::cli
