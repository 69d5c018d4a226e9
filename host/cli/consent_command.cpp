#include "host/cli/consent_command.hpp"

#include <fstream>
#include <sstream>

#include "host/cli/command_options.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/json_reader.hpp"
#include "host/plugins/lock_file.hpp"
#include "host/plugins/plugin_loader.hpp"
#include "host/plugins/plugin_registry.hpp"
#include "host/runtime/consent/verifier_registry.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxConfigBytes = 256 * 1024;

const std::string& required(const CommandLine& line, const std::string& option,
                            const std::string& command) {
  const auto it = line.values.find(option);
  if (it == line.values.end()) throw CommandUsage(command + " needs " + option);
  return it->second;
}

core::Json read_config_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw NotFound("verifier config " + file.string() + " is not a readable file");
  }
  if (fs::file_size(file, ec) > kMaxConfigBytes) {
    throw InvalidArgument("verifier config " + file.string() + " is larger than 256 KiB");
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  core::Json config = core::parse_json(text.str());
  if (!config.is_object()) {
    throw InvalidArgument("verifier config " + file.string() + " must be a JSON object");
  }
  return config;
}

int consent_trust(const std::vector<std::string>& args, std::ostream& out, const Environment& env) {
  const std::string command = "ctx consent trust";
  const CommandLine line = parse_command_line(
      args, 2, command, {"--audience", "--authenticator", "--principal", "--verifier", "--config"},
      true);
  if (!line.positional.empty()) throw CommandUsage(command + " takes no positional arguments");
  const runtime::VerifierKey key{required(line, "--audience", command),
                                 required(line, "--authenticator", command),
                                 required(line, "--principal", command)};
  const std::string& plugin_id = required(line, "--verifier", command);
  const core::Json config = read_config_file(required(line, "--config", command));
  const fs::path state = command_state_dir(line, env);

  const plugins::LockFile lock = plugins::LockFile::load(state / "plugins.lock.json");
  const plugins::LockEntry* entry = lock.find(plugins::PluginKind::kVerifier, plugin_id);
  if (entry == nullptr) {
    throw NotFound("verifier plugin " + plugin_id + " is not pinned in " +
                   (state / "plugins.lock.json").string() + " (ctx plugin pin)");
  }
  plugins::PluginRegistry plugins;
  const std::string identity = plugins.add(plugins::PluginLoader(state).load(*entry));
  runtime::TrustedVerifierRegistry registry(state, plugins);
  registry.add(key, plugin_id, config);
  if (line.json) {
    out << core::canonical_json(core::Json{{"audience", key.audience},
                                           {"authenticator_id", key.authenticator_id},
                                           {"principal_digest", key.principal_digest},
                                           {"verifier", plugin_id},
                                           {"identity_digest", identity}})
        << "\n";
  } else {
    out << "trusted verifier " << plugin_id << " (identity " << identity << ") for audience "
        << key.audience << ", authenticator " << key.authenticator_id << ", principal "
        << key.principal_digest << "\n";
  }
  return kExitOk;
}

}  // namespace

std::string consent_usage() {
  return "  ctx consent trust --audience A --authenticator ID --principal DIGEST\n"
         "                    --verifier PLUGIN_ID --config FILE [--state DIR] [--json]\n"
         "      trust the pinned verifier PLUGIN_ID, configured with the public key in FILE,\n"
         "      to check the decisions of (A, ID, DIGEST)\n";
}

int run_consent_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env) {
  return run_guarded(err, kExitUsage, [&] {
    if (args.size() < 2) throw CommandUsage("ctx consent needs a command: trust");
    const std::string& command = args[1];
    if (command == "trust") return consent_trust(args, out, env);
    throw CommandUsage("unknown consent command \"" + command + "\"");
  });
}

}  // namespace ctx::cli
