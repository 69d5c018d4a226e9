// `ctx init [--state DIR]`: creates the private state directory (0700) and its 32-byte
// installation key (installation.key, 0600) when missing; idempotent.
// `ctx catalog import DIR [--state DIR] [--json]`: validates the catalog directory and imports it
// into the state dir (runtime/catalog/catalog.hpp): all or nothing; every invalid file is one
// stderr line "ctx: error: catalog entry FILE: RULE". Progress goes to stderr when it is a
// terminal. Exit codes: 0 done (or unchanged), 1 failed (nothing imported), 2 usage.
#ifndef CTX_HOST_CLI_CATALOG_COMMAND_HPP_
#define CTX_HOST_CLI_CATALOG_COMMAND_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// `args` is the whole argv without the program name (args[0] is "init" or "catalog").
// Never throws.
int run_init_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const Environment& env);
int run_catalog_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env);

// The usage lines of `ctx init` and `ctx catalog`.
std::string catalog_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_CATALOG_COMMAND_HPP_
