// `ctx init [--state DIR]`: creates the private state directory (0700) and its 32-byte
// installation key (installation.key, 0600) when missing; idempotent.
// `ctx catalog import DIR [--strict] [--state DIR] [--json]`: imports what the hosts would load
// from DIR into the state dir (runtime/catalog/catalog.hpp); every skipped file is one stderr line
// "ctx: skipped FILE: RULE", and stdout says "imported N, skipped M (catalog DIGEST)". With
// --strict (or when nothing is left) a skipped file fails it: one stderr line "ctx: error: catalog
// entry FILE: RULE" each, nothing imported. Progress goes to stderr when it is a terminal.
// `ctx catalog add SOURCE [--name NAME] | list | update [NAME] | remove NAME | show ENTRY`:
// the catalog's sources (runtime/catalog/catalog_sources.hpp; docs/catalog.md "Sources"); add and
// update print "source NAME at COMMIT" (or "OLD -> NEW"), then one line per entry added, changed
// and removed, then the import line. The commands they print name --state DIR when it is not the
// default. Exit codes: 0 done (or unchanged), 1 failed (nothing imported), 2 usage.
// Both throw what they fail with; a runtime::CatalogImportError lists every invalid file (the
// caller, cli.cpp, prints one line per file).
#ifndef CTX_HOST_CLI_CATALOG_COMMAND_HPP_
#define CTX_HOST_CLI_CATALOG_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

struct InitOptions {
  std::optional<std::filesystem::path> state;
  // --trust-key FILE: trust that public key for consent decisions (ctx consent trust --key).
  std::optional<std::filesystem::path> trust_key;
};

struct CatalogImportOptions {
  std::filesystem::path catalog;
  std::optional<std::filesystem::path> state;
  bool json = false;
  bool strict = false;
};

// `ctx catalog add|list|update|remove|show`: `source` is SOURCE (add) or ENTRY (show); `name`
// is --name (add) or NAME (update, remove).
struct CatalogSourceOptions {
  std::string source;
  std::optional<std::string> name;
  std::optional<std::filesystem::path> state;
  bool json = false;
  bool strict = false;
};

int run_init(const InitOptions& options, const CommandIo& io);
int run_catalog_import(const CatalogImportOptions& options, const CommandIo& io);
int run_catalog_add(const CatalogSourceOptions& options, const CommandIo& io);
int run_catalog_list(const CatalogSourceOptions& options, const CommandIo& io);
int run_catalog_update(const CatalogSourceOptions& options, const CommandIo& io);
int run_catalog_remove(const CatalogSourceOptions& options, const CommandIo& io);
int run_catalog_show(const CatalogSourceOptions& options, const CommandIo& io);

// The usage lines of `ctx init` and `ctx catalog`.
std::string catalog_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CATALOG_COMMAND_HPP_
