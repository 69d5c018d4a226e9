#include "host/cli/policy_command.hpp"

#include <algorithm>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"

namespace ctx::cli {

std::string policy_usage() {
  return "  ctx policy set KIND ask-each-time|preapproved-auto [--state DIR] [--json]\n"
         "      the install consent mode of skill, agent or mcp-server (permission expansion\n"
         "      and credentials always ask)\n";
}

namespace {

// The challenges awaiting a decision, or none when the state dir has no catalog yet or its
// consent store cannot be read now (the note is advice; corruption still propagates).
std::vector<runtime::ManagedConsentChallengeProjection> pending_challenges(
    const std::filesystem::path& state) {
  try {
    return runtime::StateService::open(state)->pending_challenges();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) throw;
    return {};
  }
}

}  // namespace

int run_policy_set(const PolicySetOptions& options, const CommandIo& io) {
  const auto state = command_state_dir(options.state, io.env);
  // Only an initialised state dir gets a policy.
  runtime::read_installation_key(state);
  const runtime::InstallPolicyStore store(runtime::StatePaths::of(state).install_policy);
  runtime::InstallConsentPolicy policy = store.load();
  if (options.kind == engine::CapabilityKind::kSkill) policy.skill_mode = options.mode;
  if (options.kind == engine::CapabilityKind::kAgent) policy.agent_mode = options.mode;
  if (options.kind == engine::CapabilityKind::kMcpServer) policy.mcp_server_mode = options.mode;
  // Consents pending under the old policy can no longer be given once it changes: say so.
  std::vector<runtime::ManagedConsentChallengeProjection> stranded;
  if (policy.policy_digest() != store.load().policy_digest()) stranded = pending_challenges(state);
  store.persist(policy);
  if (!stranded.empty()) {
    std::string last = stranded.front().expires_at();
    for (const auto& challenge : stranded) last = std::max(last, challenge.expires_at());
    io.err << "ctx policy set: " << stranded.size()
           << " pending consent request(s) were asked for under the previous policy and can no "
              "longer be approved; their sessions plan again once they lapse (by "
           << last << "), or at once if the policy is set back\n";
  }
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
