#include "host/cli/catalog_command.hpp"

#include <unistd.h>

#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>

#include "host/cli/bundled_plugins.hpp"
#include "host/runtime/catalog/state_service.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/core/canonical_json.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/runtime/catalog/state_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;

struct Usage {
  std::string message;
};

struct Options {
  std::optional<fs::path> state;
  std::optional<fs::path> catalog;
  bool json = false;
};

std::string single_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// Parses options from args[first]; `positional` says whether one DIR argument is expected.
Options parse(const std::vector<std::string>& args, std::size_t first, bool positional,
              bool takes_json, const std::string& command) {
  Options options;
  for (std::size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--state") {
      if (i + 1 >= args.size() || args[i + 1].empty()) throw Usage{"--state needs a value"};
      if (options.state) throw Usage{"--state is given twice"};
      options.state = args[++i];
    } else if (arg == "--json" && takes_json) {
      options.json = true;
    } else if (!arg.empty() && arg.front() == '-') {
      throw Usage{"unknown option " + arg + " for " + command};
    } else if (positional && !options.catalog) {
      options.catalog = arg;
    } else {
      throw Usage{command + " takes " + (positional ? "one directory" : "no arguments")};
    }
  }
  if (positional && !options.catalog) throw Usage{command + " needs a catalog directory"};
  return options;
}

fs::path state_dir(const Options& options, const Environment& env) {
  return options.state ? fs::absolute(*options.state) : default_state_dir(env);
}

template <typename F>
int guarded(std::ostream& err, F&& body) {
  try {
    return body();
  } catch (const Usage& usage) {
    err << "ctx: " << single_line(usage.message) << " (see ctx --help)\n";
    return kExitUsage;
  } catch (const runtime::CatalogImportError& e) {
    for (const auto& problem : e.problems()) {
      err << "ctx: error: catalog entry " << single_line(problem.file) << ": "
          << single_line(problem.rule) << "\n";
    }
    err << "ctx: error: nothing was imported (" << e.problems().size() << " invalid file"
        << (e.problems().size() == 1 ? "" : "s") << ")\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err << "ctx: error: " << single_line(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    err << "ctx: error: unknown failure\n";
    return kExitFailure;
  }
}

}  // namespace

std::string catalog_usage() {
  return "  ctx init [--state DIR]\n"
         "      create the private state directory and its installation key, and pin the\n"
         "      plugins bundled next to ctx into DIR/plugins.lock.json; idempotent\n"
         "  ctx catalog import DIR [--state DIR] [--json]\n"
         "      validate a catalog (skills/<name>/SKILL.md, agents/<name>.md,\n"
         "      mcp-servers/<name>.json, harnesses/<name>.json) and import it; one error\n"
         "      line per invalid file and nothing imported when any file is invalid\n";
}

int run_init_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const Environment& env) {
  return guarded(err, [&] {
    const Options options = parse(args, 1, false, false, "ctx init");
    const fs::path dir = state_dir(options, env);
    const runtime::StateDirInit done = runtime::init_state_dir(dir);
    if (done.created_dir || done.created_key) {
      out << "initialized state directory " << dir.string() << "\n";
    } else {
      out << "state directory " << dir.string() << " is already initialized\n";
    }
    const BundledPinResult pins = pin_bundled_plugins(dir);
    if (!pins.pinned.empty()) {
      out << "pinned " << pins.pinned.size() << " bundled plugin"
          << (pins.pinned.size() == 1 ? "" : "s") << " from " << pins.directory->string() << "\n";
    }
    // The safe default (ask-each-time for every kind), persisted: a signed decision is only
    // resolved against a persisted policy (runtime spec §3.14 step 10).
    const runtime::InstallPolicyStore policy(runtime::StatePaths::of(dir).install_policy);
    if (!policy.has_persisted()) {
      policy.persist(runtime::InstallConsentPolicy::safe_default());
      out << "persisted the default install policy: ask-each-time for skills, agents and mcp "
             "servers\n";
    }
    return kExitOk;
  });
}

int run_catalog_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env) {
  return guarded(err, [&] {
    if (args.size() < 2) throw Usage{"ctx catalog needs a command: import"};
    if (args[1] != "import") throw Usage{"unknown catalog command \"" + args[1] + "\""};
    const Options options = parse(args, 2, true, true, "ctx catalog import");
    const fs::path dir = state_dir(options, env);
    runtime::CatalogProgress progress;
    if (&err == &std::cerr && ::isatty(STDERR_FILENO) == 1) {
      progress = [&err](std::string_view phase, std::size_t done, std::size_t total) {
        err << "\rctx: " << phase << " " << done << "/" << total << (done == total ? "\n" : "")
            << std::flush;
      };
    }
    const auto result = runtime::import_catalog(fs::absolute(*options.catalog), dir, progress);
    if (options.json) {
      const core::Json value = {{"catalog_digest", result.catalog_digest},
                                {"changed", result.changed},
                                {"entries", result.entry_count},
                                {"graph_sha256", result.graph_sha256},
                                {"objects", result.object_count}};
      out << core::canonical_json(value) << "\n";
    } else if (result.changed) {
      out << "imported " << result.entry_count << " capabilities (catalog " << result.catalog_digest
          << ")\n";
    } else {
      out << "catalog " << result.catalog_digest << " is already imported (" << result.entry_count
          << " capabilities)\n";
    }
    return kExitOk;
  });
}

}  // namespace ctx::cli
