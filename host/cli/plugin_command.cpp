#include "host/cli/plugin_command.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include "host/app/installation.hpp"
#include "host/app/plugins.hpp"
#include "host/core/canonical_json.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
using plugins::LockEntry;
using plugins::LockFile;

fs::path state_dir(const PluginOptions& options, const Environment& env) {
  return options.state ? *options.state : default_state_dir(env);
}

// The state directory, when it exists, must be as trusted as the lock (nothing of it is loaded,
// but the engine's durable state lives there).
void check_state_dir(const fs::path& dir) {
  plugins::require_trusted_directory(dir, "state directory", /*missing_ok=*/true);
}

}  // namespace

std::string plugin_usage() {
  return "  ctx plugin pin --lock FILE [--state DIR] [--replace] PLUGIN.so...\n"
         "      trust on first use: read each plugin's identity note, hash and size, and\n"
         "      write its lock entry; executes nothing. --replace re-pins other bytes\n"
         "  ctx plugin verify --lock FILE [--state DIR] [--load [--timeout SECONDS]]\n"
         "      re-check every pinned plugin's bytes, note and dependencies; executes\n"
         "      nothing. --load also loads each one in a supervised child process with a\n"
         "      deadline (default 10 s). Exit 1 if any entry fails\n"
         "  ctx plugin list --lock FILE [--json]\n"
         "      show the pinned plugins\n";
}

int run_plugin_pin(const PluginOptions& options, const CommandIo& io) {
  const fs::path state = state_dir(options, io.env);
  check_state_dir(state);
  std::vector<LockEntry> pinned;
  int failures = 0;
  for (const fs::path& file : options.files) {
    try {
      LockEntry entry = app::inspect_plugin_for_pin(state, file);
      for (const LockEntry& other : pinned) {
        if (other.kind == entry.kind && other.id == entry.id) {
          throw plugins::DuplicatePlugin("duplicate plugin " + entry.label() + ": both " +
                                         other.path + " and " + entry.path + " declare it");
        }
      }
      pinned.push_back(std::move(entry));
    } catch (const std::exception& e) {
      io.err << "ctx: cannot pin " << file.string() << ": " << single_line_text(e.what()) << "\n";
      ++failures;
    }
  }
  if (failures > 0) {
    io.err << "ctx: lock file " << options.lock.string() << " left unchanged\n";
    return kExitFailure;
  }
  std::vector<std::string> replaced;
  try {
    LockFile::update(options.lock, [&](LockFile& lock) {
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
    io.err << "ctx: " << single_line_text(e.what()) << "\n";
    io.err << "ctx: lock file " << options.lock.string() << " left unchanged\n";
    return kExitFailure;
  }
  for (const std::string& line : replaced) io.out << line << "\n";
  for (const LockEntry& entry : pinned) {
    io.out << "pinned " << entry.label() << " " << entry.version << " sha256:" << entry.sha256
           << " " << entry.path << "\n";
  }
  return kExitOk;
}

int run_plugin_verify(const PluginOptions& options, const CommandIo& io) {
  const LockFile lock = LockFile::load(options.lock);
  const fs::path state = state_dir(options, io.env);
  check_state_dir(state);
  const std::chrono::seconds timeout(options.timeout_seconds);
  int failures = 0;
  for (const LockEntry& entry : lock.entries()) {
    try {
      const std::string digest = app::check_pinned_plugin(state, entry);
      if (options.load) {
        io.out.flush();
        const std::string loaded = plugins::run_supervised(
            entry.label(), timeout, [&] { return app::load_pinned_plugin(state, entry); });
        if (loaded != digest) {
          throw plugins::PluginIdentityMismatch("plugin " + entry.label() +
                                                " loaded with identity " + loaded +
                                                "; its bytes and note give " + digest);
        }
      }
      io.out << "ok " << entry.label() << " " << entry.version << " identity " << digest
             << (options.load ? " loaded" : "") << "\n";
    } catch (const std::exception& e) {
      io.err << "ctx: verify failed for " << entry.label() << ": " << single_line_text(e.what())
             << "\n";
      ++failures;
    }
  }
  return failures == 0 ? kExitOk : kExitFailure;
}

int run_plugin_list(const PluginOptions& options, const CommandIo& io) {
  const LockFile lock = LockFile::load(options.lock);
  if (options.json) {
    io.out << core::canonical_json(lock.to_json()) << "\n";
    return kExitOk;
  }
  for (const LockEntry& entry : lock.entries()) {
    io.out << plugins::kind_name(entry.kind) << " " << entry.id << " " << entry.version << " abi "
           << entry.abi_major << "." << entry.abi_minor << " " << entry.platform
           << " sha256:" << entry.sha256 << " " << entry.path << "\n";
  }
  return kExitOk;
}

}  // namespace ctx::cli
