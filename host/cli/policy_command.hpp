// `ctx policy set KIND ask-each-time|preapproved-auto [--state DIR] [--json]`: sets the install
// consent mode of one installable kind (skill, agent, mcp-server) in the state dir's install
// policy (<state>/install-policy, runtime/consent/install_policy_store.hpp), keeping the other
// kinds' modes. Permission expansion and credential requirements always ask, whatever the mode.
// Prints the resulting policy (--json: its persisted object). Exit codes: 0 set (or unchanged),
// 1 failed (the policy is left as it was), 2 usage (unknown kind or mode).
#ifndef CTX_HOST_CLI_POLICY_COMMAND_HPP_
#define CTX_HOST_CLI_POLICY_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/app/consent.hpp"
#include "host/app/vocabulary.hpp"
#include "host/cli/command_options.hpp"

namespace ctx::cli {

struct PolicySetOptions {
  engine::CapabilityKind kind = engine::CapabilityKind::kSkill;  // never kHarness
  runtime::InstallMode mode = runtime::InstallMode::kAskEachTime;
  std::optional<std::filesystem::path> state;
  bool json = false;
};

// Errors: NotFound for an uninitialised state dir; the policy store's (the policy is unchanged).
int run_policy_set(const PolicySetOptions& options, const CommandIo& io);

std::string policy_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_POLICY_COMMAND_HPP_
