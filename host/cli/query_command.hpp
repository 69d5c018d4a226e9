// `ctx query prepare --work FILE|- [--state DIR] [--json]`: plans the current work FILE describes
//   ({"session":{"tenant","workspace","repository","session"},"signals":[…],"languages":[…],
//   "requested_limit":N}; "-" reads stdin) through the state dir's managed query service; only
//   catalog-vocabulary signals are kept. An exact retry of the same work returns the same result.
// `ctx query reopen QUERY_REF [--state DIR] [--json]`: re-projects a prepared query (never plans).
// `ctx desired set QUERY_REF CAPABILITY_ID... [--choice ID] [--state DIR] [--json]`: records the
//   user's chosen subset of the committed plan (ID: a 64-hex logical choice id; by default one
//   derived from the query, the ids and the latest committed choice).
// --json prints the result object with the seed's field names (runtime/catalog/state_service.hpp);
// otherwise a short summary. Exit codes: 0 done, 1 failed (one stderr line; nothing was
// changed), 2 usage.
#ifndef CTX_HOST_CLI_QUERY_COMMAND_HPP_
#define CTX_HOST_CLI_QUERY_COMMAND_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// args[0] is "query" / "desired". Never throws.
int run_query_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                      const Environment& env);
int run_desired_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env);

std::string query_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_QUERY_COMMAND_HPP_
