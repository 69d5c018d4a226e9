#include "host/cli/policy_command.hpp"

#include "host/cli/command_options.hpp"
#include "host/core/canonical_json.hpp"
#include "host/runtime/catalog/state_dir.hpp"
#include "host/runtime/catalog/state_service.hpp"
#include "host/runtime/consent/install_policy_store.hpp"

namespace ctx::cli {

std::string policy_usage() {
  return "  ctx policy set KIND ask-each-time|preapproved-auto [--state DIR] [--json]\n"
         "      the install consent mode of skill, agent or mcp-server (permission expansion\n"
         "      and credentials always ask)\n";
}

int run_policy_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       const Environment& env) {
  return run_guarded(err, kExitUsage, [&] {
    if (args.size() < 2 || args[1] != "set") throw CommandUsage("ctx policy needs the command set");
    const CommandLine line = parse_command_line(args, 2, "ctx policy set", {}, true);
    if (line.positional.size() != 2) {
      throw CommandUsage("ctx policy set takes KIND and ask-each-time|preapproved-auto");
    }
    const auto kind = engine::find_enum<engine::CapabilityKind>(line.positional[0]);
    if (!kind || *kind == engine::CapabilityKind::kHarness) {
      throw CommandUsage("KIND must be skill, agent or mcp-server");
    }
    runtime::InstallMode mode;
    try {
      mode = runtime::parse_install_mode(line.positional[1]);
    } catch (const InvalidArgument&) {
      throw CommandUsage("the mode must be ask-each-time or preapproved-auto");
    }
    const auto state = command_state_dir(line, env);
    // Only an initialised state dir gets a policy.
    runtime::read_installation_key(state);
    const runtime::InstallPolicyStore store(runtime::StatePaths::of(state).install_policy);
    runtime::InstallConsentPolicy policy = store.load();
    if (kind == engine::CapabilityKind::kSkill) policy.skill_mode = mode;
    if (kind == engine::CapabilityKind::kAgent) policy.agent_mode = mode;
    if (kind == engine::CapabilityKind::kMcpServer) policy.mcp_server_mode = mode;
    store.persist(policy);
    if (line.json) {
      out << core::canonical_json(policy.to_json()) << "\n";
    } else {
      out << "install policy " << policy.policy_digest() << ": skill "
          << runtime::install_mode_name(policy.skill_mode) << ", agent "
          << runtime::install_mode_name(policy.agent_mode) << ", mcp-server "
          << runtime::install_mode_name(policy.mcp_server_mode) << "\n";
    }
    return kExitOk;
  });
}

}  // namespace ctx::cli
