#include "host/cli/catalog_command.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "host/app/catalog.hpp"
#include "host/app/consent.hpp"
#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/app/wire.hpp"
#include "host/cli/bundled_plugins.hpp"
#include "host/cli/consent_command.hpp"
#include "host/cli/progress_line.hpp"
#include "host/core/canonical_json.hpp"

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
         "      --strict imports nothing when any file is skipped; DIR is the source \"local\"\n"
         "  ctx catalog add SOURCE [--name NAME] [--strict] [--state DIR] [--json]\n"
         "      add a catalog source and import every source together: SOURCE is a local\n"
         "      directory, a git URL (https://, ssh://, git://, file://, user@host:path) or\n"
         "      owner/repo[@ref][/subpath] on GitHub, fetched with your own git into\n"
         "      DIR/catalog/git (no hook, submodule, filter or LFS smudge runs); prints \"source\n"
         "      NAME at COMMIT\" and each entry added. --name: the source's name (default: the\n"
         "      repository's or directory's name)\n"
         "  ctx catalog list [--state DIR] [--json]\n"
         "      the sources: name, kind, URL or directory, commit, entries\n"
         "  ctx catalog update [NAME] [--strict] [--state DIR] [--json]\n"
         "      read NAME (every source when left out) again, fetching a git one, and import;\n"
         "      prints \"OLD -> NEW\" and each entry added, changed and removed. What is\n"
         "      installed keeps its bytes: a changed entry takes effect when installed again\n"
         "      (with consent where the policy asks)\n"
         "  ctx catalog remove NAME [--state DIR] [--json]\n"
         "      forget a source and import the other sources' entries\n"
         "  ctx catalog show ENTRY [--state DIR] [--json]\n"
         "      an entry (KIND:NAME or NAME): its source, commit, path and description\n";
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
  const auto result = [&] {
    std::unique_ptr<ProgressLine> line;  // cleared before anything else is printed
    const auto progress = terminal_progress(io, options.json, line);
    return runtime::import_catalog(fs::absolute(options.catalog), dir, progress,
                                   {.strict = options.strict});
  }();
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

namespace {

void print_skipped(const std::vector<runtime::CatalogProblem>& skipped, std::ostream& err) {
  for (const auto& p : skipped) {
    err << "ctx: skipped " << single_line_text(p.file) << ": " << single_line_text(p.rule) << "\n";
  }
}

void print_import(const runtime::CatalogImportResult& result, std::ostream& out) {
  out << "imported " << result.entry_count << ", skipped " << result.skipped.size() << " (catalog "
      << result.catalog_digest << (result.changed ? "" : ", unchanged") << ")\n";
}

std::string origin_text(const runtime::SourceOrigin& origin) {
  if (origin.location.empty()) return "a directory not recorded";
  std::string text = origin.location;
  if (!origin.ref.empty()) text += " @" + origin.ref;
  if (!origin.subpath.empty()) text += " /" + origin.subpath;
  return text;
}

// "source NAME at COMMIT" (or "OLD -> NEW"), the counts, one line per id, then the import.
void print_update(const runtime::SourceUpdate& update, std::ostream& out, std::ostream& err) {
  print_skipped(update.import.skipped, err);
  out << "source " << update.name;
  if (!update.commit.empty()) {
    if (!update.previous_commit.empty() && update.previous_commit != update.commit) {
      out << ": " << update.previous_commit << " -> " << update.commit;
    } else {
      out << " at " << update.commit;
    }
  }
  out << ": " << update.added.size() << " added, " << update.changed.size() << " changed, "
      << update.removed.size() << " removed\n";
  for (const auto& id : update.added) out << "  added " << id << "\n";
  for (const auto& id : update.changed) out << "  changed " << id << "\n";
  for (const auto& id : update.removed) out << "  removed " << id << "\n";
  print_import(update.import, out);
  if (!update.changed.empty()) {
    out << "what is installed keeps its bytes; a changed entry takes effect when installed again\n";
  }
}

// The first `limit` characters (UTF-8) of `text`, with "..." when cut.
std::string shown(const std::string& text, std::size_t limit) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (chars == limit) return text.substr(0, i) + "...";
      ++chars;
    }
  }
  return text;
}

// " --state DIR" when the state dir is not the default one.
std::string state_words(const fs::path& dir, const CommandIo& io) {
  return runtime::state_argument(printed_state(dir, io.env));
}

// The source named `name`; NotFound names `ctx catalog list` as printed.
void require_source(const fs::path& dir, const std::string& name, const CommandIo& io) {
  if (!runtime::find_source(dir, name)) {
    throw NotFound("no catalog source is named " + name + " (see ctx catalog list" +
                   state_words(dir, io) + ")");
  }
}

}  // namespace

int run_catalog_add(const CatalogSourceOptions& options, const CommandIo& io) {
  const fs::path dir = command_state_dir(options.state, io.env);
  const runtime::SourceOrigin origin = runtime::parse_source(options.source, fs::current_path());
  const std::string name = options.name ? *options.name : runtime::default_source_name(origin);
  if (runtime::is_source_name(name) && runtime::find_source(dir, name)) {
    throw FailedPrecondition("a catalog source named " + name + " exists (ctx catalog update " +
                             name + state_words(dir, io) + ", or add it with --name NAME)");
  }
  const auto update = [&] {
    std::unique_ptr<ProgressLine> line;
    const auto progress = terminal_progress(io, options.json, line);
    return runtime::add_source(dir, name, origin, {.strict = options.strict}, progress);
  }();
  if (options.json) {
    io.out << core::canonical_json(runtime::source_update_json(update)) << "\n";
  } else {
    print_update(update, io.out, io.err);
  }
  return kExitOk;
}

int run_catalog_update(const CatalogSourceOptions& options, const CommandIo& io) {
  const fs::path dir = command_state_dir(options.state, io.env);
  std::vector<std::string> names;
  if (options.name) {
    require_source(dir, *options.name, io);
    names.push_back(*options.name);
  } else {
    for (const auto& source : runtime::list_sources(dir)) names.push_back(source.name);
    if (names.empty()) {
      throw NotFound("no catalog source is recorded (ctx catalog add SOURCE" +
                     state_words(dir, io) + ")");
    }
  }
  core::Json all = core::Json::array();
  for (const auto& name : names) {
    const auto update = [&] {
      std::unique_ptr<ProgressLine> line;
      const auto progress = terminal_progress(io, options.json, line);
      return runtime::update_source(dir, name, {.strict = options.strict}, progress);
    }();
    if (options.json) {
      all.push_back(runtime::source_update_json(update));
    } else {
      print_update(update, io.out, io.err);
    }
  }
  if (options.json) io.out << core::canonical_json(core::Json{{"sources", all}}) << "\n";
  return kExitOk;
}

int run_catalog_remove(const CatalogSourceOptions& options, const CommandIo& io) {
  const fs::path dir = command_state_dir(options.state, io.env);
  const std::string& name = *options.name;
  require_source(dir, name, io);
  const auto result = runtime::remove_source(dir, name);
  if (options.json) {
    io.out << core::canonical_json(
                  core::Json{{"import", runtime::catalog_import_json(result)}, {"removed", name}})
           << "\n";
  } else {
    print_skipped(result.skipped, io.err);
    io.out << "removed source " << name << "\n";
    print_import(result, io.out);
  }
  return kExitOk;
}

int run_catalog_list(const CatalogSourceOptions& options, const CommandIo& io) {
  const fs::path dir = command_state_dir(options.state, io.env);
  const auto sources = runtime::list_sources(dir);
  if (options.json) {
    io.out << core::canonical_json(runtime::source_list_json(sources)) << "\n";
    return kExitOk;
  }
  if (sources.empty()) io.out << "no catalog sources\n";
  for (const auto& s : sources) {
    io.out << s.name << "  " << runtime::source_kind_name(s.origin) << "  "
           << single_line_text(origin_text(s.origin));
    if (!s.commit.empty()) io.out << "  " << s.commit;
    io.out << "  " << s.entries.size() << " entries, " << s.skipped.size() << " skipped\n";
  }
  return kExitOk;
}

int run_catalog_show(const CatalogSourceOptions& options, const CommandIo& io) {
  const fs::path dir = command_state_dir(options.state, io.env);
  const auto catalog = runtime::ImportedCatalog::open(dir);
  const std::string& wanted = options.source;
  std::vector<const runtime::CatalogEntry*> found;
  for (const auto& e : catalog->entries()) {
    if (e.capability_id() == wanted || e.name == wanted) found.push_back(&e);
  }
  if (found.empty()) throw NotFound("the catalog has no entry " + wanted);
  if (found.size() > 1) {
    std::string ids;
    for (const auto* e : found) ids += (ids.empty() ? "" : ", ") + e->capability_id();
    throw InvalidArgument("more than one entry is named " + wanted + " (" + ids + ")");
  }
  const runtime::CatalogEntry& e = *found.front();
  const auto source = runtime::find_source(dir, e.source);
  if (options.json) {
    io.out << core::canonical_json(runtime::catalog_entry_json(e, source ? &*source : nullptr))
           << "\n";
    return kExitOk;
  }
  io.out << e.capability_id() << "\n";
  if (e.label != e.name) io.out << "  label: " << single_line_text(e.label) << "\n";
  io.out << "  source: " << e.source;
  if (source) io.out << " (" << single_line_text(origin_text(source->origin)) << ")";
  io.out << "\n";
  if (source && !source->commit.empty()) io.out << "  commit: " << source->commit << "\n";
  io.out << "  path: " << single_line_text(runtime::entry_location(e)) << "\n";
  io.out << "  description: "
         << single_line_text(shown(e.description, runtime::kMaxDescriptionChars)) << "\n";
  if (!e.when_to_use.empty()) {
    io.out << "  when to use: "
           << single_line_text(shown(e.when_to_use, runtime::kMaxDescriptionChars)) << "\n";
  }
  return kExitOk;
}

}  // namespace ctx::cli
