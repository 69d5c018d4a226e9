// `ctx query prepare --work FILE|- [--state DIR] [--json]`: plans the current work FILE describes
//   ({"session":{"tenant","workspace","repository","session"},"signals":[…],"languages":[…],
//   "requested_limit":N}; "-" reads stdin) through the state dir's managed query service; only
//   catalog-vocabulary signals are kept. An exact retry of the same work returns the same result.
// `ctx query reopen QUERY_REF [--state DIR] [--json]`: re-projects a prepared query (never plans).
// `ctx desired set QUERY_REF CAPABILITY_ID... [--choice ID] [--state DIR] [--json]`: records the
//   user's chosen subset of the committed plan (ID: a 64-hex logical choice id; by default one
//   derived from the query, the ids and the latest committed choice).
// --json prints the result object with the seed's field names (app/wire.hpp);
// otherwise a short summary. Exit codes: 0 done, 1 failed (one stderr line; nothing was
// changed), 2 usage.
#ifndef CTX_HOST_CLI_QUERY_COMMAND_HPP_
#define CTX_HOST_CLI_QUERY_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

struct QueryPrepareOptions {
  std::string work;  // FILE, or "-": io.in
  std::optional<std::filesystem::path> state;
  bool json = false;
};

struct QueryReopenOptions {
  std::string query_ref;
  std::optional<std::filesystem::path> state;
  bool json = false;
};

struct DesiredSetOptions {
  std::string query_ref;
  std::vector<std::string> capability_ids;  // at least one
  std::optional<std::string> choice;        // 64 lower-case hex
  std::optional<std::filesystem::path> state;
  bool json = false;
};

// Each throws what the state dir's service refuses with (typed errors; nothing changed).
int run_query_prepare(const QueryPrepareOptions& options, const CommandIo& io);
int run_query_reopen(const QueryReopenOptions& options, const CommandIo& io);
int run_desired_set(const DesiredSetOptions& options, const CommandIo& io);

std::string query_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_QUERY_COMMAND_HPP_
