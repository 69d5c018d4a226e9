#include "host/cli/hooks_command.hpp"

#include <filesystem>
#include <optional>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/runtime/catalog/state_service.hpp"

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

}  // namespace

int run_hooks(const HooksOptions& options, const CommandIo& io) {
  std::ostream& out = io.out;
  const Environment& env = io.env;
  const hk::HookScope scope = options.user ? hk::HookScope::kUser : hk::HookScope::kProject;
  const fs::path home = env.home ? fs::path(*env.home) : fs::path();
  const fs::path project = scope == hk::HookScope::kProject
                               ? fs::absolute(options.project.value_or(fs::current_path()))
                               : fs::path();
  const std::optional<fs::path> codex_home =
      env.codex_home ? std::optional<fs::path>(*env.codex_home) : std::nullopt;
  // Claude Code run with $CLAUDE_CONFIG_DIR reads its user settings, and loads user skills,
  // there instead of ~/.claude.
  std::optional<fs::path> claude_config_dir;
  if (options.host == hk::HookHost::kClaudeCode && env.claude_config_dir &&
      fs::path(*env.claude_config_dir).is_absolute()) {
    claude_config_dir = fs::path(*env.claude_config_dir);
  }
  const hk::HookTarget target =
      hk::hook_target(options.host, scope, home, project, codex_home, claude_config_dir);
  const std::string host(hk::host_name(options.host));
  hk::HooksChange change;
  if (options.install) {
    hk::HookCommand command;
    command.executable = this_executable(env);
    if (options.state) command.state_dir = fs::absolute(*options.state);
    change = hk::install_hooks(target, command);
  } else {
    change = hk::uninstall_hooks(target);
  }
  // The state dir's installed skills activate where that host looks for the project's skills
  // (--project) or the user's (--user), when the state dir is initialised and the host's adapter
  // is pinned.
  std::optional<fs::path> activation;
  const bool user = options.user;
  if (options.install && (!user || env.home)) {
    try {
      const fs::path state = options.state ? fs::absolute(*options.state) : default_state_dir(env);
      activation = runtime::set_activation_target(
                       state, host, user ? home : project,
                       user ? runtime::ActivationScope::kUser : runtime::ActivationScope::kProject,
                       claude_config_dir)
                       .skills_dir;
    } catch (const NotFound&) {
    } catch (const InvalidArgument&) {
    }
    // The skills directory exists before the host starts: Claude Code watches a top-level
    // skills directory for new skills only if it existed at startup, so a skill approved
    // mid-session then works in that session.
    std::error_code ignored;
    if (activation) fs::create_directories(*activation, ignored);
  }
  if (options.json) {
    core::Json result = {{"host", host},
                         {"action", options.install ? "install" : "uninstall"},
                         {"changed", change.changed},
                         {"file", change.file.string()},
                         {"events", change.events}};
    if (change.backup) result["backup"] = change.backup->string();
    if (options.install) {
      result["notice"] = change.notice;
      result["created"] = change.created;
    }
    if (activation) result["skills_activate_in"] = activation->string();
    out << core::canonical_json(result) << "\n";
    return kExitOk;
  }
  const std::string file = change.file.string();
  if (options.install) {
    if (change.changed) {
      out << "installed ctx hooks for " << host << " in " << file << " (" << change.events.size()
          << (change.created
                  ? " events; ctx created the file: uninstall removes it)\n"
                  : " events; previous content saved in " + change.backup->string() + ")\n");
    } else {
      out << "ctx hooks for " << host << " are already installed in " << file << "\n";
    }
    out << change.notice << "\n";
    if (activation) {
      out << "skills you approve (ctx consent approve) activate in " << activation->string()
          << "\n";
    }
  } else if (change.changed) {
    out << "removed ctx hooks for " << host << " from " << file << "\n";
  } else {
    out << "no ctx hooks for " << host << " in " << file << "\n";
  }
  return kExitOk;
}

std::string hooks_usage() {
  return "  ctx hooks install claude-code|codex [--project DIR | --user] [--state DIR] [--json]\n"
         "      add `ctx hook <host>` to the host's hook configuration (.claude/settings.json,\n"
         "      .codex/hooks.json); idempotent, other settings kept, backup in <file>.ctx-backup;\n"
         "      with --project, approved skills then activate in that project's skills dir\n"
         "  ctx hooks uninstall claude-code|codex [--project DIR | --user] [--json]\n"
         "      remove exactly the handlers ctx added\n";
}

}  // namespace ctx::cli
