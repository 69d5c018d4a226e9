// `ctx policy set KIND ask-each-time|preapproved-auto [--state DIR] [--json]`: sets the install
// consent mode of one installable kind (skill, agent, mcp-server) in the state dir's install
// policy (<state>/install-policy, runtime/consent/install_policy_store.hpp), keeping the other
// kinds' modes. Permission expansion and credential requirements always ask, whatever the mode.
// Prints the resulting policy (--json: its persisted object). Exit codes: 0 set (or unchanged),
// 1 failed (the policy is left as it was), 2 usage (unknown kind or mode).
#ifndef CTX_HOST_CLI_POLICY_COMMAND_HPP_
#define CTX_HOST_CLI_POLICY_COMMAND_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

namespace ctx::cli {

// args[0] == "policy". Never throws.
int run_policy_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       const Environment& env);

std::string policy_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_POLICY_COMMAND_HPP_
