#include "host/cli/consent_command.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <istream>
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

// Progress lines go to stderr only when it is the terminal (never into a script's capture).
bool progress_wanted(const std::ostream& err) {
  return &err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
}

std::string read_assertion(const std::string& source, std::istream& stdin_stream) {
  std::string bytes;
  if (source == "-") {
    bytes.assign(std::istreambuf_iterator<char>(stdin_stream), std::istreambuf_iterator<char>());
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
  out << r.capability_id() << " (" << engine::to_string(r.kind()) << "): " << to_string(r.outcome())
      << " (" << r.reason_code() << ")";
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

int run_consent_show(const ConsentShowOptions& options, const CommandIo& io) {
  auto state = runtime::StateService::open(command_state_dir(options.common.state, io.env));
  const auto challenges = state->pending_challenges();
  std::ostream& out = io.out;
  if (options.common.json) {
    out << core::canonical_json(runtime::consent_show_json(challenges)) << "\n";
    return kExitOk;
  }
  if (challenges.empty()) {
    out << "no install consent is pending\n";
    return kExitOk;
  }
  for (const auto& c : challenges) {
    out << c.capability_id() << " (" << engine::to_string(c.kind())
        << ") asks for install consent: challenge " << c.challenge_digest() << ", expires "
        << c.expires_at() << "\n"
        << "  approve: " << approve_command(c.challenge_digest(), "approve") << "\n"
        << "  deny:    " << approve_command(c.challenge_digest(), "deny") << "\n";
  }
  return kExitOk;
}

int run_consent_resolve(const ConsentResolveOptions& options, const CommandIo& io) {
  const std::string payload = read_assertion(options.assertion, io.in);
  auto state = runtime::StateService::open(command_state_dir(options.common.state, io.env));
  if (progress_wanted(io.err)) io.err << "ctx: checking the signed decision...\n";
  const auto result = state->resolve_consent(payload);
  print_decision(result, options.common.json, io.out);
  return kExitOk;
}

int run_consent_recover(const ConsentRecoverOptions& options, const CommandIo& io) {
  require_digest(options.challenge_digest);
  auto state = runtime::StateService::open(command_state_dir(options.common.state, io.env));
  if (progress_wanted(io.err)) io.err << "ctx: recovering the consent's durable state...\n";
  const auto result = state->recover_consent(options.challenge_digest);
  print_decision(result, options.common.json, io.out);
  return kExitOk;
}

int run_consent_decide(const ConsentDecideOptions& options, const CommandIo& io) {
  const std::string& digest = options.challenge_digest;
  const engine::Decision decision = options.decision;
  require_digest(digest);
  const UserDecisionKey key = UserDecisionKey::load(options.key);
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  auto state = runtime::StateService::open(state_dir);
  const auto challenge = state->challenge(digest);
  const plugins::PluginRegistry none;
  const runtime::TrustedVerifierRegistry trusted(state_dir, none);
  const auto registration = registration_for(trusted.registrations(), challenge.audience(), key);
  const core::SystemClock clock;
  const auto assertion = sign_decision(key, registration, digest, decision, clock.now(),
                                       core::parse_rfc3339(challenge.expires_at()));
  std::ostream& err = io.err;
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
  print_decision(result, options.common.json, io.out);
  return kExitOk;
}

int run_consent_trust(const ConsentTrustOptions& options, const CommandIo& io) {
  const runtime::VerifierKey key{options.audience, options.authenticator, options.principal};
  const std::string& plugin_id = options.verifier;
  const core::Json config = read_config_file(options.config);
  const fs::path state = command_state_dir(options.common.state, io.env);
  std::ostream& out = io.out;

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
  if (options.common.json) {
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

}  // namespace ctx::cli
