#include "host/cli/policy_command.hpp"

#include "host/core/canonical_json.hpp"
#include "host/runtime/catalog/state_dir.hpp"
#include "host/runtime/catalog/state_service.hpp"

namespace ctx::cli {

std::string policy_usage() {
  return "  ctx policy set KIND ask-each-time|preapproved-auto [--state DIR] [--json]\n"
         "      the install consent mode of skill, agent or mcp-server (permission expansion\n"
         "      and credentials always ask)\n";
}

int run_policy_set(const PolicySetOptions& options, const CommandIo& io) {
  const auto state = command_state_dir(options.state, io.env);
  // Only an initialised state dir gets a policy.
  runtime::read_installation_key(state);
  const runtime::InstallPolicyStore store(runtime::StatePaths::of(state).install_policy);
  runtime::InstallConsentPolicy policy = store.load();
  if (options.kind == engine::CapabilityKind::kSkill) policy.skill_mode = options.mode;
  if (options.kind == engine::CapabilityKind::kAgent) policy.agent_mode = options.mode;
  if (options.kind == engine::CapabilityKind::kMcpServer) policy.mcp_server_mode = options.mode;
  store.persist(policy);
  if (options.json) {
    io.out << core::canonical_json(policy.to_json()) << "\n";
  } else {
    io.out << "install policy " << policy.policy_digest() << ": skill "
           << runtime::install_mode_name(policy.skill_mode) << ", agent "
           << runtime::install_mode_name(policy.agent_mode) << ", mcp-server "
           << runtime::install_mode_name(policy.mcp_server_mode) << "\n";
  }
  return kExitOk;
}

}  // namespace ctx::cli
