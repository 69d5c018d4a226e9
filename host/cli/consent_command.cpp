#include "host/cli/consent_command.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "host/cli/command_options.hpp"
#include "host/cli/consent_key.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/json_reader.hpp"
#include "host/plugins/lock_file.hpp"
#include "host/plugins/plugin_loader.hpp"
#include "host/plugins/plugin_registry.hpp"
#include "host/runtime/catalog/state_service.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
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

// Progress lines go to stderr only when it is the terminal (never into a script's capture).
bool progress_wanted(const std::ostream& err) {
  return &err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
}

std::string read_assertion(const std::string& source) {
  std::string bytes;
  if (source == "-") {
    bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::error_code ec;
    if (!fs::is_regular_file(source, ec)) {
      throw NotFound("assertion " + source + " is not a readable file");
    }
    if (fs::file_size(source, ec) > runtime::kMaxSignedAssertionBytes + 1) {
      throw InvalidArgument("assertion is larger than 16 KiB");
    }
    std::ifstream in(source, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    bytes = text.str();
  }
  // One line terminator (echo, an editor) is not part of the canonical wire bytes.
  if (!bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  return bytes;
}

void require_digest(const std::string& digest) {
  if (!core::is_sha256_hex(digest)) {
    throw InvalidArgument("CHALLENGE_DIGEST must be 64 lower-case hex characters");
  }
}

std::string approve_command(const std::string& digest, const char* verb) {
  return std::string("ctx consent ") + verb + " " + digest + " --key FILE";
}

void print_decision(const runtime::ConsentDecisionResult& result, bool json, std::ostream& out) {
  if (json) {
    out << core::canonical_json(runtime::consent_decision_json(result)) << "\n";
    return;
  }
  const auto& r = result.resolution;
  out << r.capability_id() << " (" << engine::to_string(r.kind())
      << "): " << to_string(r.outcome()) << " ("
      << r.reason_code() << ")";
  if (r.reason_code() == "installed-capability-is-already-active") {
    out << ": it is installed and active";
  }
  if (result.activation) {
    out << "; activation " << engine::to_string(result.activation->outcome)
        << (result.activation->outcome == engine::Outcome::kApplied
                ? " (active where the host loads skills)"
                : "");
  }
  if (const auto& next = r.next_challenge()) {
    out << "; decide with: " << approve_command(next->challenge_digest(), "approve") << " or "
        << approve_command(next->challenge_digest(), "deny");
  }
  out << "\n";
}

int consent_show(const std::vector<std::string>& args, std::ostream& out, const Environment& env) {
  const CommandLine line = parse_command_line(args, 2, "ctx consent show", {}, true);
  if (!line.positional.empty()) throw CommandUsage("ctx consent show takes no arguments");
  auto state = runtime::StateService::open(command_state_dir(line, env));
  const auto challenges = state->pending_challenges();
  if (line.json) {
    out << core::canonical_json(runtime::consent_show_json(challenges)) << "\n";
    return kExitOk;
  }
  if (challenges.empty()) {
    out << "no install consent is pending\n";
    return kExitOk;
  }
  for (const auto& c : challenges) {
    out << c.capability_id() << " (" << engine::to_string(c.kind())
        << ") asks for install consent: challenge "
        << c.challenge_digest() << ", expires " << c.expires_at() << "\n"
        << "  approve: " << approve_command(c.challenge_digest(), "approve") << "\n"
        << "  deny:    " << approve_command(c.challenge_digest(), "deny") << "\n";
  }
  return kExitOk;
}

int consent_resolve(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const Environment& env) {
  const CommandLine line = parse_command_line(args, 2, "ctx consent resolve", {"--assertion"}, true);
  if (!line.positional.empty()) throw CommandUsage("ctx consent resolve takes no arguments");
  const std::string payload = read_assertion(required(line, "--assertion", "ctx consent resolve"));
  auto state = runtime::StateService::open(command_state_dir(line, env));
  if (progress_wanted(err)) err << "ctx: checking the signed decision...\n";
  const auto result = state->resolve_consent(payload);
  print_decision(result, line.json, out);
  return kExitOk;
}

int consent_recover(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const Environment& env) {
  const CommandLine line = parse_command_line(args, 2, "ctx consent recover", {}, true);
  if (line.positional.size() != 1) {
    throw CommandUsage("ctx consent recover takes one CHALLENGE_DIGEST");
  }
  require_digest(line.positional[0]);
  auto state = runtime::StateService::open(command_state_dir(line, env));
  if (progress_wanted(err)) err << "ctx: recovering the consent's durable state...\n";
  const auto result = state->recover_consent(line.positional[0]);
  print_decision(result, line.json, out);
  return kExitOk;
}

int consent_decide(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                   const Environment& env, engine::Decision decision) {
  const std::string command = "ctx consent " + args[1];
  const CommandLine line = parse_command_line(args, 2, command, {"--key"}, true);
  if (line.positional.size() != 1) throw CommandUsage(command + " takes one CHALLENGE_DIGEST");
  const std::string& digest = line.positional[0];
  require_digest(digest);
  const UserDecisionKey key = UserDecisionKey::load(required(line, "--key", command));
  const fs::path state_dir = command_state_dir(line, env);
  auto state = runtime::StateService::open(state_dir);
  const auto challenge = state->challenge(digest);
  const plugins::PluginRegistry none;
  const runtime::TrustedVerifierRegistry trusted(state_dir, none);
  const auto registration = registration_for(trusted.registrations(), challenge.audience(), key);
  const core::SystemClock clock;
  const auto assertion = sign_decision(key, registration, digest, decision, clock.now(),
                                       core::parse_rfc3339(challenge.expires_at()));
  const bool progress = progress_wanted(err);
  if (progress) {
    err << "ctx: signed the " << engine::to_string(decision) << " decision for "
        << challenge.capability_id()
        << (decision == engine::Decision::kGranted ? "; installing and activating...\n" : "\n");
  }
  const auto result = state->resolve_consent(runtime::encode_signed_assertion(assertion));
  if (progress && result.activation) {
    err << "ctx: " << challenge.capability_id() << " activation "
        << engine::to_string(result.activation->outcome) << "\n";
  }
  print_decision(result, line.json, out);
  return kExitOk;
}

}  // namespace

std::string consent_usage() {
  return "  ctx consent show [--state DIR] [--json]\n"
         "      the install consent challenges awaiting your decision: capability, challenge\n"
         "      digest, expiry and the exact approve / deny command\n"
         "  ctx consent approve|deny CHALLENGE_DIGEST --key FILE [--state DIR] [--json]\n"
         "      sign the decision with your own key (Ed25519 PEM, or an OpenSSH key through\n"
         "      ssh-keygen -Y sign: ssh-agent or a security key may hold it) and resolve it;\n"
         "      a grant installs the skill and activates it where the host loads skills\n"
         "  ctx consent resolve --assertion FILE|- [--state DIR] [--json]\n"
         "      resolve a signed decision assertion (the wire payload; one trailing newline\n"
         "      is ignored)\n"
         "  ctx consent recover CHALLENGE_DIGEST [--state DIR] [--json]\n"
         "      finish what a challenge's durable state allows (after a crash), without\n"
         "      authenticating; never installs twice\n"
         "      exit codes: 0 the outcome is printed, 1 refused or failed (one stderr line;\n"
         "      a refused decision changes nothing), 2 usage\n"
         "  ctx consent trust --audience A --authenticator ID --principal DIGEST\n"
         "                    --verifier PLUGIN_ID --config FILE [--state DIR] [--json]\n"
         "      trust the pinned verifier PLUGIN_ID, configured with the public key in FILE,\n"
         "      to check the decisions of (A, ID, DIGEST)\n";
}

int run_consent_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env) {
  return run_guarded(err, kExitUsage, [&] {
    if (args.size() < 2) {
      throw CommandUsage("ctx consent needs a command: show, approve, deny, resolve, recover, trust");
    }
    const std::string& command = args[1];
    if (command == "trust") return consent_trust(args, out, env);
    if (command == "show") return consent_show(args, out, env);
    if (command == "resolve") return consent_resolve(args, out, err, env);
    if (command == "recover") return consent_recover(args, out, err, env);
    if (command == "approve") {
      return consent_decide(args, out, err, env, engine::Decision::kGranted);
    }
    if (command == "deny") return consent_decide(args, out, err, env, engine::Decision::kDenied);
    throw CommandUsage("unknown consent command \"" + command + "\"");
  });
}

}  // namespace ctx::cli
