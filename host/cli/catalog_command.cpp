#include "host/cli/catalog_command.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "host/cli/bundled_plugins.hpp"
#include "host/cli/consent_command.hpp"
#include "host/core/canonical_json.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/runtime/consent/install_policy_store.hpp"

namespace ctx::cli {

namespace fs = std::filesystem;

std::string catalog_usage() {
  return "  ctx init [--state DIR] [--trust-key FILE]\n"
         "      create the private state directory and its installation key, and pin the\n"
         "      plugins bundled next to ctx into DIR/plugins.lock.json; idempotent.\n"
         "      --trust-key: trust that public key for your consent decisions (as ctx consent\n"
         "      trust --key); without it, on a terminal, offers ~/.ssh/id_ed25519.pub while no\n"
         "      key is trusted\n"
         "  ctx catalog import DIR [--strict] [--state DIR] [--json]\n"
         "      import what the hosts would load from DIR (folders holding SKILL.md,\n"
         "      agents/*.md, mcp-servers/*.json, harnesses/*.json; docs/catalog.md); each file\n"
         "      no host would load is one \"ctx: skipped FILE: RULE\" line and the rest imports;\n"
         "      --strict imports nothing when any file is skipped\n";
}

int run_init(const InitOptions& options, const CommandIo& io) {
  std::ostream& out = io.out;
  const fs::path dir = command_state_dir(options.state, io.env);
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
  const std::string audience(runtime::kStateConsentAudience);
  if (options.trust_key) {
    trust_key_file(dir, *options.trust_key, audience, /*json=*/false, out);
  } else {
    offer_user_key(dir, io);
  }
  return kExitOk;
}

int run_catalog_import(const CatalogImportOptions& options, const CommandIo& io) {
  std::ostream& out = io.out;
  std::ostream& err = io.err;
  const fs::path dir = command_state_dir(options.state, io.env);
  runtime::CatalogProgress progress;
  if (&err == &std::cerr && ::isatty(STDERR_FILENO) == 1) {
    progress = [&err](std::string_view phase, std::size_t done, std::size_t total) {
      err << "\rctx: " << phase << " " << done << "/" << total << (done == total ? "\n" : "")
          << std::flush;
    };
  }
  const auto result = runtime::import_catalog(fs::absolute(options.catalog), dir, progress,
                                              {.strict = options.strict});
  for (const auto& problem : result.skipped) {
    err << "ctx: skipped " << single_line_text(problem.file) << ": "
        << single_line_text(problem.rule) << "\n";
  }
  if (options.json) {
    core::Json skipped = core::Json::array();
    for (const auto& p : result.skipped) skipped.push_back({{"file", p.file}, {"rule", p.rule}});
    const core::Json value = {
        {"catalog_digest", result.catalog_digest}, {"changed", result.changed},
        {"entries", result.entry_count},           {"graph_sha256", result.graph_sha256},
        {"objects", result.object_count},          {"skipped", skipped}};
    out << core::canonical_json(value) << "\n";
  } else {
    out << "imported " << result.entry_count << ", skipped " << result.skipped.size()
        << " (catalog " << result.catalog_digest << (result.changed ? "" : ", unchanged") << ")\n";
  }
  return kExitOk;
}

}  // namespace ctx::cli
