#include "host/cli/cli.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <set>
#include <string_view>
#include <utility>

#include "host/cli/catalog_command.hpp"
#include "host/cli/consent_command.hpp"
#include "host/cli/demo_command.hpp"
#include "host/cli/hook_command.hpp"
#include "host/cli/hooks_command.hpp"
#include "host/cli/journal_command.hpp"
#include "host/cli/policy_command.hpp"
#include "host/cli/query_command.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/plugins/errors.hpp"
#include "host/plugins/lock_file.hpp"
#include "host/plugins/plugin_loader.hpp"
#include "host/plugins/supervised_child.hpp"
#include "host/server/server.hpp"

#ifndef CTX_VERSION
#error "CTX_VERSION must be defined by the build (PROJECT_VERSION)"
#endif

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using plugins::LockEntry;
using plugins::LockFile;
using plugins::PluginLoader;

// A command line that does not match any form; exit code 2.
class UsageError : public InvalidArgument {
 public:
  explicit UsageError(const std::string& message) : InvalidArgument(message) {}
};

// Parsed options of one `ctx plugin <command>`.
struct PluginOptions {
  std::optional<fs::path> lock;
  std::optional<fs::path> state;
  bool json = false;
  bool replace = false;                       // pin
  bool load = false;                          // verify
  std::chrono::milliseconds timeout{10'000};  // verify --load
  std::vector<fs::path> files;
};

// Seconds for --timeout: a positive integer up to a day.
std::chrono::milliseconds parse_timeout(const std::string& text) {
  if (text.empty() || text.size() > 5 ||
      text.find_first_not_of("0123456789") != std::string::npos || std::stoul(text) == 0 ||
      std::stoul(text) > 86400) {
    throw UsageError("--timeout needs a whole number of seconds between 1 and 86400");
  }
  return std::chrono::seconds(std::stoul(text));
}

// Keeps error output to one line whatever a message contains.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

PluginOptions parse_plugin_options(const std::string& command,
                                   const std::vector<std::string>& args) {
  const bool takes_state = command == "pin" || command == "verify";
  const bool takes_json = command == "list";
  const bool takes_files = command == "pin";
  const bool is_pin = command == "pin";
  const bool is_verify = command == "verify";
  bool timeout_given = false;
  PluginOptions options;
  bool only_files = false;
  for (std::size_t i = 2; i < args.size(); ++i) {
    std::string arg = args[i];
    if (only_files || arg.empty() || arg.front() != '-') {
      if (!takes_files) throw UsageError("ctx plugin " + command + " takes no file arguments");
      options.files.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      only_files = true;
      continue;
    }
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    const auto value = [&]() -> std::string {
      if (inline_value) {
        if (inline_value->empty()) throw UsageError(arg + " needs a value");
        return *inline_value;
      }
      if (i + 1 >= args.size() || args[i + 1].empty()) throw UsageError(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--lock") {
      options.lock = value();
    } else if (arg == "--state" && takes_state) {
      options.state = value();
    } else if (arg == "--json" && takes_json && !inline_value) {
      options.json = true;
    } else if (arg == "--replace" && is_pin && !inline_value) {
      options.replace = true;
    } else if (arg == "--load" && is_verify && !inline_value) {
      options.load = true;
    } else if (arg == "--timeout" && is_verify) {
      options.timeout = parse_timeout(value());
      timeout_given = true;
    } else {
      throw UsageError("unknown option " + arg + " for ctx plugin " + command);
    }
  }
  if (!options.lock) throw UsageError("ctx plugin " + command + " needs --lock FILE");
  if (timeout_given && !options.load) throw UsageError("--timeout needs --load");
  if (takes_files && options.files.empty()) {
    throw UsageError("ctx plugin pin needs at least one PLUGIN.so");
  }
  return options;
}

fs::path state_dir(const PluginOptions& options, const Environment& env) {
  return options.state ? *options.state : default_state_dir(env);
}

// The state directory, when it exists, must be as trusted as the lock (nothing of it is loaded,
// but the engine's durable state lives there).
void check_state_dir(const fs::path& dir) {
  plugins::require_trusted_directory(dir, "state directory", /*missing_ok=*/true);
}

// Pins every file from its bytes (nothing is executed); writes the lock, under its flock, only
// when all of them could be pinned. Re-pinning other bytes needs --replace.
int plugin_pin(const PluginOptions& options, const Environment& env, std::ostream& out,
               std::ostream& err) {
  const fs::path state = state_dir(options, env);
  check_state_dir(state);
  const PluginLoader loader(state);
  std::vector<LockEntry> pinned;
  int failures = 0;
  for (const fs::path& file : options.files) {
    try {
      LockEntry entry = loader.inspect_for_pin(file);
      for (const LockEntry& other : pinned) {
        if (other.kind == entry.kind && other.id == entry.id) {
          throw plugins::DuplicatePlugin("duplicate plugin " + entry.label() + ": both " +
                                         other.path + " and " + entry.path + " declare it");
        }
      }
      pinned.push_back(std::move(entry));
    } catch (const std::exception& e) {
      err << "ctx: cannot pin " << file.string() << ": " << one_line(e.what()) << "\n";
      ++failures;
    }
  }
  if (failures > 0) {
    err << "ctx: lock file " << options.lock->string() << " left unchanged\n";
    return kExitFailure;
  }
  std::vector<std::string> replaced;
  try {
    LockFile::update(*options.lock, [&](LockFile& lock) {
      replaced.clear();
      for (const LockEntry& entry : pinned) {
        const LockEntry* old = lock.find(entry.kind, entry.id);
        if (old != nullptr && old->sha256 != entry.sha256) {
          if (!options.replace) {
            throw plugins::PinConflict(
                "plugin " + entry.label() + " is already pinned to sha256:" + old->sha256 + " (" +
                old->path + "); " + entry.path + " has sha256:" + entry.sha256 +
                "; pass --replace to re-pin it");
          }
          replaced.push_back("replaced " + entry.label() + " sha256:" + old->sha256 +
                             " \u2192 sha256:" + entry.sha256);
        }
        lock.upsert(entry);
      }
    });
  } catch (const plugins::PinConflict& e) {
    err << "ctx: " << one_line(e.what()) << "\n";
    err << "ctx: lock file " << options.lock->string() << " left unchanged\n";
    return kExitFailure;
  }
  for (const std::string& line : replaced) out << line << "\n";
  for (const LockEntry& entry : pinned) {
    out << "pinned " << entry.label() << " " << entry.version << " sha256:" << entry.sha256 << " "
        << entry.path << "\n";
  }
  return kExitOk;
}

// Checks every pinned file's bytes, note and dependencies (executing nothing); with --load also
// loads each in a supervised child. One line per entry.
int plugin_verify(const PluginOptions& options, const Environment& env, std::ostream& out,
                  std::ostream& err) {
  const LockFile lock = LockFile::load(*options.lock);
  const fs::path state = state_dir(options, env);
  check_state_dir(state);
  const PluginLoader loader(state);
  int failures = 0;
  for (const LockEntry& entry : lock.entries()) {
    try {
      const std::string digest = loader.check(entry).digest();
      if (options.load) {
        out.flush();
        const std::string loaded = plugins::run_supervised(entry.label(), options.timeout, [&] {
          return loader.load(entry)->identity().digest();
        });
        if (loaded != digest) {
          throw plugins::PluginIdentityMismatch("plugin " + entry.label() +
                                                " loaded with identity " + loaded +
                                                "; its bytes and note give " + digest);
        }
      }
      out << "ok " << entry.label() << " " << entry.version << " identity " << digest
          << (options.load ? " loaded" : "") << "\n";
    } catch (const std::exception& e) {
      err << "ctx: verify failed for " << entry.label() << ": " << one_line(e.what()) << "\n";
      ++failures;
    }
  }
  return failures == 0 ? kExitOk : kExitFailure;
}

int plugin_list(const PluginOptions& options, std::ostream& out) {
  const LockFile lock = LockFile::load(*options.lock);
  if (options.json) {
    out << core::canonical_json(lock.to_json()) << "\n";
    return kExitOk;
  }
  for (const LockEntry& entry : lock.entries()) {
    out << plugins::kind_name(entry.kind) << " " << entry.id << " " << entry.version << " abi "
        << entry.abi_major << "." << entry.abi_minor << " " << entry.platform
        << " sha256:" << entry.sha256 << " " << entry.path << "\n";
  }
  return kExitOk;
}

int dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const Environment& env) {
  if (args.empty()) throw UsageError("missing command");
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    if (args.size() != 1) throw UsageError("--help takes no arguments");
    out << usage();
    return kExitOk;
  }
  if (first == "--version") {
    if (args.size() != 1) throw UsageError("--version takes no arguments");
    out << "ctx " << CTX_VERSION << "\n";
    return kExitOk;
  }
  if (first == "hooks") return run_hooks_command(args, out, err, env);
  if (first == "init") return run_init_command(args, out, err, env);
  if (first == "catalog") return run_catalog_command(args, out, err, env);
  if (first == "hook") return run_hook_command(args, std::cin, out, err, env);
  if (first == "query") return run_query_command(args, out, err, env);
  if (first == "desired") return run_desired_command(args, out, err, env);
  if (first == "policy") return run_policy_command(args, out, err, env);
  if (first == "journal") return run_journal_command(args, out, err, env);
  if (first == "consent") return run_consent_command(args, out, err, env);
  if (first == "demo") return run_demo_command(args, out, err, env);
  if (first == "serve") {
    // ctx serve [--state DIR]: logic in host/server; the log and errors go to `err`.
    std::optional<fs::path> state;
    for (std::size_t i = 1; i < args.size(); ++i) {
      if (args[i] != "--state" || state || i + 1 >= args.size() || args[i + 1].empty()) {
        throw UsageError("ctx serve takes only --state DIR");
      }
      state = args[++i];
    }
    return server::serve(fs::absolute(state ? *state : default_state_dir(env)), err, err);
  }
  if (first != "plugin") throw UsageError("unknown command \"" + first + "\"");
  if (args.size() < 2) throw UsageError("ctx plugin needs a command: pin, verify or list");
  const std::string& command = args[1];
  if (command != "pin" && command != "verify" && command != "list") {
    throw UsageError("unknown plugin command \"" + command + "\"");
  }
  const PluginOptions options = parse_plugin_options(command, args);
  if (command == "pin") return plugin_pin(options, env, out, err);
  if (command == "verify") return plugin_verify(options, env, out, err);
  return plugin_list(options, out);
}

}  // namespace

Environment Environment::from_process() {
  Environment env;
  if (const char* value = std::getenv("XDG_STATE_HOME")) env.xdg_state_home = value;
  if (const char* value = std::getenv("HOME")) env.home = value;
  return env;
}

fs::path default_state_dir(const Environment& env) {
  if (env.xdg_state_home && !env.xdg_state_home->empty() &&
      fs::path(*env.xdg_state_home).is_absolute()) {
    return fs::path(*env.xdg_state_home) / "ctx";
  }
  if (env.home && !env.home->empty() && fs::path(*env.home).is_absolute()) {
    return fs::path(*env.home) / ".local" / "state" / "ctx";
  }
  throw InvalidArgument("no state directory: set --state, XDG_STATE_HOME or HOME");
}

std::string usage() {
  return "usage:\n"
         "  ctx --help                 show this help\n"
         "  ctx --version              print the version\n"
         "  ctx plugin pin --lock FILE [--state DIR] [--replace] PLUGIN.so...\n"
         "      trust on first use: read each plugin's identity note, hash and size, and\n"
         "      write its lock entry; executes nothing. --replace re-pins other bytes\n"
         "  ctx plugin verify --lock FILE [--state DIR] [--load [--timeout SECONDS]]\n"
         "      re-check every pinned plugin's bytes, note and dependencies; executes\n"
         "      nothing. --load also loads each one in a supervised child process with a\n"
         "      deadline (default 10 s). Exit 1 if any entry fails\n"
         "  ctx plugin list --lock FILE [--json]\n"
         "      show the pinned plugins\n"
         "  ctx serve [--state DIR]\n"
         "      JSON-RPC 2.0 server on DIR/ctx.sock (0600) until SIGTERM/SIGINT\n" +
         hooks_usage() + catalog_usage() + query_usage() + hook_usage() + policy_usage() + journal_usage() +
         consent_usage() + demo_usage() +
         "\n"
         "--state defaults to $XDG_STATE_HOME/ctx, else ~/.local/state/ctx.\n"
         "exit codes: 0 ok, 1 command failed, 2 usage error; ctx hook exits 0 (a reply or\n"
         "nothing) or 1 (one stderr line) and never 2, which would block the host\n";
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const Environment& env) {
  try {
    return dispatch(args, out, err, env);
  } catch (const UsageError& e) {
    err << "ctx: " << one_line(e.what()) << " (see ctx --help)\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "ctx: error: " << one_line(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    err << "ctx: error: unknown failure\n";
    return kExitFailure;
  }
}

}  // namespace ctx::cli
