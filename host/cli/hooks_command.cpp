#include "host/cli/hooks_command.hpp"

#include <exception>
#include <filesystem>
#include <optional>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/runtime/catalog/state_service.hpp"
#include "host/runtime/hooks/hooks_config.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
namespace hk = ctx::runtime::hooks;

struct HooksOptions {
  bool install = true;
  hk::HookHost host = hk::HookHost::kClaudeCode;
  hk::HookScope scope = hk::HookScope::kProject;
  std::optional<fs::path> project;
  std::optional<fs::path> state;
  bool json = false;
};

struct Usage {
  std::string message;
};

std::string single_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

HooksOptions parse(const std::vector<std::string>& args) {
  if (args.size() < 3) throw Usage{"ctx hooks needs install|uninstall and claude-code|codex"};
  HooksOptions options;
  if (args[1] != "install" && args[1] != "uninstall") {
    throw Usage{"unknown hooks command \"" + args[1] + "\""};
  }
  options.install = args[1] == "install";
  const auto host = hk::parse_host(args[2]);
  if (!host) throw Usage{"ctx hooks supports claude-code and codex, not \"" + args[2] + "\""};
  options.host = *host;
  bool user = false;
  for (std::size_t i = 3; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= args.size() || args[i + 1].empty()) throw Usage{arg + " needs a value"};
      return args[++i];
    };
    if (arg == "--project") {
      options.project = value();
    } else if (arg == "--user") {
      user = true;
    } else if (arg == "--state") {
      options.state = value();
    } else if (arg == "--json") {
      options.json = true;
    } else {
      throw Usage{"unknown option " + arg + " for ctx hooks " + args[1]};
    }
  }
  if (user && options.project) throw Usage{"--project and --user exclude each other"};
  if (user) options.scope = hk::HookScope::kUser;
  if (options.state && !options.install) throw Usage{"--state is for ctx hooks install"};
  return options;
}

int run(const HooksOptions& options, std::ostream& out, const Environment& env) {
  const fs::path home = env.home ? fs::path(*env.home) : fs::path();
  const fs::path project = options.scope == hk::HookScope::kProject
                               ? fs::absolute(options.project.value_or(fs::current_path()))
                               : fs::path();
  const hk::HookTarget target = hk::hook_target(options.host, options.scope, home, project);
  const std::string host(hk::host_name(options.host));
  hk::HooksChange change;
  if (options.install) {
    hk::HookCommand command;
    command.executable = fs::read_symlink("/proc/self/exe");
    if (options.state) command.state_dir = fs::absolute(*options.state);
    change = hk::install_hooks(target, command);
  } else {
    change = hk::uninstall_hooks(target);
  }
  // The state dir's installed skills activate where that host looks for the project's skills
  // (--project) or the user's (--user), when the state dir is initialised and the host's adapter
  // is pinned.
  std::optional<fs::path> activation;
  const bool user = options.scope == hk::HookScope::kUser;
  if (options.install && (!user || env.home)) {
    try {
      const fs::path state =
          options.state ? fs::absolute(*options.state) : default_state_dir(env);
      activation = runtime::set_activation_target(
                       state, host, user ? home : project,
                       user ? runtime::ActivationScope::kUser : runtime::ActivationScope::kProject)
                       .skills_dir;
    } catch (const NotFound&) {
    } catch (const InvalidArgument&) {
    }
  }
  if (options.json) {
    core::Json result = {{"host", host},
                         {"action", options.install ? "install" : "uninstall"},
                         {"changed", change.changed},
                         {"file", change.file.string()},
                         {"events", change.events}};
    if (change.backup) result["backup"] = change.backup->string();
    if (options.install) result["notice"] = change.notice;
    if (activation) result["skills_activate_in"] = activation->string();
    out << core::canonical_json(result) << "\n";
    return kExitOk;
  }
  const std::string file = change.file.string();
  if (options.install) {
    if (change.changed) {
      out << "installed ctx hooks for " << host << " in " << file << " (" << change.events.size()
          << " events; previous content saved in " << change.backup->string() << ")\n";
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

}  // namespace

std::string hooks_usage() {
  return "  ctx hooks install claude-code|codex [--project DIR | --user] [--state DIR] [--json]\n"
         "      add `ctx hook <host>` to the host's hook configuration (.claude/settings.json,\n"
         "      .codex/hooks.json); idempotent, other settings kept, backup in <file>.ctx-backup;\n"
         "      with --project, approved skills then activate in that project's skills dir\n"
         "  ctx hooks uninstall claude-code|codex [--project DIR | --user] [--json]\n"
         "      remove exactly the handlers ctx added\n";
}

int run_hooks_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                      const Environment& env) {
  try {
    return run(parse(args), out, env);
  } catch (const Usage& usage) {
    err << "ctx: " << single_line(usage.message) << " (see ctx --help)\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "ctx: error: " << single_line(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    err << "ctx: error: unknown failure\n";
    return kExitFailure;
  }
}

}  // namespace ctx::cli
