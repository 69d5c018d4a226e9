#include "host/cli/consent_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <istream>
#include <iterator>
#include <sstream>

#include "host/app/consent.hpp"
#include "host/app/installation.hpp"
#include "host/app/plugins.hpp"
#include "host/app/state_service.hpp"
#include "host/app/wire.hpp"
#include "host/cli/command_options.hpp"
#include "host/cli/consent_key.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/json_reader.hpp"

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

// "pdf-export (skill) DIGEST" for each of `challenges`, comma-separated.
std::string listed(const std::vector<runtime::ManagedConsentChallengeProjection>& challenges) {
  std::string text;
  for (const auto& c : challenges) {
    const std::string& id = c.capability_id();
    const auto colon = id.find(':');
    text += (text.empty() ? "" : ", ") +
            (colon == std::string::npos ? id
                                        : id.substr(colon + 1) + " (" + id.substr(0, colon) + ")") +
            " " + c.challenge_digest();
  }
  return text;
}

// The challenge digest `selector` names: a digest as given; a capability name ("pdf-export",
// "skill:pdf-export") or "" (any): the one pending challenge that matches. Errors: NotFound (no
// pending challenge matches); FailedPrecondition (several match: listed); InvalidArgument.
std::string chosen_challenge(runtime::StateService& state, const std::string& selector) {
  if (core::is_sha256_hex(selector)) return selector;
  const bool name_shape = !selector.empty() && selector.size() <= 128 &&
                          std::all_of(selector.begin(), selector.end(), [](char c) {
                            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                                   c == '_' || c == ':' || c == '@' || c == '-';
                          });
  if (!selector.empty() && !name_shape) {
    throw InvalidArgument(
        "CHALLENGE must be a challenge digest (64 lower-case hex) or a capability "
        "name such as pdf-export");
  }
  std::vector<runtime::ManagedConsentChallengeProjection> matching;
  for (auto& c : state.pending_challenges()) {
    const std::string& id = c.capability_id();
    const auto colon = id.find(':');
    if (selector.empty() || id == selector ||
        (colon != std::string::npos && id.substr(colon + 1) == selector)) {
      matching.push_back(std::move(c));
    }
  }
  if (matching.empty()) {
    throw NotFound(selector.empty() ? std::string("no install consent is pending")
                                    : "no install consent is pending for " + selector);
  }
  if (matching.size() > 1) {
    throw FailedPrecondition(std::to_string(matching.size()) + " install consents are pending" +
                             (selector.empty() ? "" : " for " + selector) +
                             ": name one by its digest: " + listed(matching));
  }
  return matching.front().challenge_digest();
}

void require_digest(const std::string& digest) {
  if (!core::is_sha256_hex(digest)) {
    throw InvalidArgument("CHALLENGE_DIGEST must be 64 lower-case hex characters");
  }
}

void print_decision(const runtime::ConsentDecisionResult& result, bool json,
                    const std::optional<fs::path>& shown_state, std::ostream& out) {
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
    const auto& activation = *result.activation;
    out << "; activation " << engine::to_string(activation.outcome);
    if (activation.outcome == engine::Outcome::kApplied) {
      // Where the host loads it, or that no host does yet (no `ctx hooks install` named a place).
      out << (activation.place.empty()
                  ? " (in the state dir only, where no host loads it: ctx hooks install "
                    "claude-code --project DIR" +
                        runtime::state_argument(shown_state) +
                        " (or codex) makes that project's sessions activate it)"
                  : " (active in " + activation.place.string() + ")");
    }
  }
  if (const auto& next = r.next_challenge()) {
    out << "; decide with: "
        << runtime::consent_command("approve", next->challenge_digest(), shown_state) << " or "
        << runtime::consent_command("deny", next->challenge_digest(), shown_state);
  }
  out << "\n";
}

}  // namespace

std::string consent_usage() {
  return "  ctx consent show [--state DIR] [--json]\n"
         "      the install consent challenges awaiting your decision: capability, challenge\n"
         "      digest, expiry and the exact approve / deny command\n"
         "  ctx consent approve|deny [CHALLENGE] --key FILE [--state DIR] [--json]\n"
         "      CHALLENGE: the challenge digest, or a capability name (pdf-export) naming the\n"
         "      one pending challenge for it; none: the one pending challenge (several: listed,\n"
         "      nothing decided). Signs the decision with your own key (Ed25519 PEM, or an\n"
         "      OpenSSH key through ssh-keygen -Y sign: ssh-agent or a security key may hold\n"
         "      it) and resolves it; a grant installs the skill and activates it where the host\n"
         "      loads skills\n"
         "  ctx consent resolve --assertion FILE|- [--state DIR] [--json]\n"
         "      resolve a signed decision assertion (the wire payload; one trailing newline\n"
         "      is ignored)\n"
         "  ctx consent recover CHALLENGE_DIGEST [--state DIR] [--json]\n"
         "      finish what a challenge's durable state allows (after a crash), without\n"
         "      authenticating; never installs twice\n"
         "      exit codes: 0 the outcome is printed, 1 refused or failed (one stderr line;\n"
         "      a refused decision changes nothing), 2 usage\n"
         "  ctx consent trust --key FILE [--audience A] [--state DIR] [--json]\n"
         "      trust your public key (ssh-ed25519, sk-ssh-ed25519@openssh.com or Ed25519 PEM):\n"
         "      verifier, authenticator and principal (the SHA-256 of its OpenSSH key blob) are\n"
         "      derived from it; audience ctx-local unless A; trusting it again changes nothing.\n"
         "      By hand instead of --key: --authenticator ID --principal DIGEST\n"
         "      --verifier PLUGIN_ID --config FILE trusts the pinned verifier PLUGIN_ID,\n"
         "      configured with the public key in FILE, to check the decisions of (A, ID, DIGEST)\n"
         "  ctx consent keys [--state DIR] [--json]\n"
         "      the trusted keys, with the fingerprint ssh-keygen -l prints\n"
         "  ctx consent untrust FINGERPRINT [--state DIR] [--json]\n"
         "      stop trusting the key with that fingerprint\n"
         "  ctx consent approvals [--state DIR] [--json]\n"
         "      the installs you approved: each is activated again, in any project and session,\n"
         "      without a new consent while its content and the install policy are unchanged\n"
         "  ctx consent revoke NAME [--state DIR] [--json]\n"
         "      forget the approval of NAME (pdf-export, or skill:pdf-export): the next plan\n"
         "      that wants it asks for consent again\n";
}

int run_consent_show(const ConsentShowOptions& options, const CommandIo& io) {
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  const std::optional<fs::path> shown_state = printed_state(state_dir, io.env);
  auto state = runtime::StateService::open(state_dir);
  const auto challenges = state->pending_challenges();
  std::ostream& out = io.out;
  if (options.common.json) {
    out << core::canonical_json(
               runtime::consent_show_json(challenges, shown_state, &state->catalog()))
        << "\n";
    return kExitOk;
  }
  if (challenges.empty()) {
    out << "no install consent is pending\n";
    return kExitOk;
  }
  for (const auto& c : challenges) {
    out << c.capability_id() << " (" << engine::to_string(c.kind())
        << ") asks for install consent: challenge " << c.challenge_digest() << ", expires "
        << c.expires_at() << "\n";
    const std::string effects = runtime::install_effects_text(state->catalog(), c.capability_id());
    if (!effects.empty()) out << "  installing it " << effects << "\n";
    out << "  approve: " << runtime::consent_command("approve", c.challenge_digest(), shown_state)
        << "\n"
        << "  deny:    " << runtime::consent_command("deny", c.challenge_digest(), shown_state)
        << "\n";
  }
  return kExitOk;
}

int run_consent_resolve(const ConsentResolveOptions& options, const CommandIo& io) {
  const std::string payload = read_assertion(options.assertion, io.in);
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  auto state = runtime::StateService::open(state_dir);
  if (progress_wanted(io.err)) io.err << "ctx: checking the signed decision...\n";
  const auto result = state->resolve_consent(payload);
  print_decision(result, options.common.json, printed_state(state_dir, io.env), io.out);
  return kExitOk;
}

int run_consent_recover(const ConsentRecoverOptions& options, const CommandIo& io) {
  require_digest(options.challenge_digest);
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  auto state = runtime::StateService::open(state_dir);
  if (progress_wanted(io.err)) io.err << "ctx: recovering the consent's durable state...\n";
  const auto result = state->recover_consent(options.challenge_digest);
  print_decision(result, options.common.json, printed_state(state_dir, io.env), io.out);
  return kExitOk;
}

int run_consent_decide(const ConsentDecideOptions& options, const CommandIo& io) {
  const engine::Decision decision = options.decision;
  const UserDecisionKey key = UserDecisionKey::load(options.key);
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  auto state = runtime::StateService::open(state_dir);
  const std::string digest = chosen_challenge(*state, options.challenge);
  const auto challenge = state->challenge(digest);
  const app::LoadedPlugins none;
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
  print_decision(result, options.common.json, printed_state(state_dir, io.env), io.out);
  return kExitOk;
}

namespace {

// Loads the pinned verifier `plugin_id` of `state` and registers `key` for it with `config`;
// returns the plugin's identity digest. Errors: NotFound (not pinned); the registry's.
std::string register_verifier(const fs::path& state, const runtime::VerifierKey& key,
                              const std::string& plugin_id, const core::Json& config) {
  const fs::path lock_path = runtime::StatePaths::of(state).plugin_lock;
  const plugins::LockFile lock = plugins::LockFile::load(lock_path);
  const plugins::LockEntry* entry = lock.find(plugins::PluginKind::kVerifier, plugin_id);
  if (entry == nullptr) {
    throw NotFound("verifier plugin " + plugin_id + " is not pinned in " + lock_path.string() +
                   " (ctx plugin pin)");
  }
  return app::Installation(state, lock).trust_verifier(key, plugin_id, config);
}

// "ssh-ed25519" of a registration's sshsig line, "ed25519" of an ed25519 PEM, else its plugin id.
std::string key_type_of(const runtime::VerifierRegistration& r) {
  if (r.plugin_id == "sshsig") {
    const auto line = r.config.find("public_key");
    if (line != r.config.end() && line->is_string()) {
      const std::string& text = line->get_ref<const std::string&>();
      return text.substr(0, text.find(' '));
    }
  }
  return r.plugin_id;
}

bool is_fingerprint(std::string_view text) {
  constexpr std::string_view kPrefix = "SHA256:";
  if (text.size() != kPrefix.size() + 43 || text.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  return std::all_of(text.begin() + kPrefix.size(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
  });
}

}  // namespace

bool trust_key_file(const fs::path& state, const fs::path& file, const std::string& audience,
                    bool json, std::ostream& out) {
  const TrustKey key = read_trust_key(file);
  const app::LoadedPlugins none;
  bool already = false;
  for (const auto& r : runtime::TrustedVerifierRegistry(state, none).registrations()) {
    already = already || (r.key.audience == audience && r.plugin_id == key.verifier_id &&
                          config_fingerprint(r.plugin_id, r.config) == key.fingerprint);
  }
  const runtime::VerifierKey verifier_key{audience, key.authenticator_id, key.principal_digest};
  std::string identity;
  if (!already) identity = register_verifier(state, verifier_key, key.verifier_id, key.config);
  if (json) {
    out << core::canonical_json(core::Json{{"audience", audience},
                                           {"authenticator_id", key.authenticator_id},
                                           {"principal_digest", key.principal_digest},
                                           {"verifier", key.verifier_id},
                                           {"fingerprint", key.fingerprint},
                                           {"key_type", key.key_type},
                                           {"already_trusted", already}})
        << "\n";
  } else if (already) {
    out << key.fingerprint << " (" << key.key_type << ") is already trusted for audience "
        << audience << "\n";
  } else {
    out << "trusted " << key.fingerprint << " (" << key.key_type << ") for audience " << audience
        << ": verifier " << key.verifier_id << " (identity " << identity << "), authenticator "
        << key.authenticator_id << ", principal " << key.principal_digest << "\n";
  }
  return !already;
}

void offer_user_key(const fs::path& state, const CommandIo& io) {
  if (&io.in != &std::cin || ::isatty(STDIN_FILENO) != 1 || ::isatty(STDERR_FILENO) != 1 ||
      !io.env.home || !fs::path(*io.env.home).is_absolute()) {
    return;
  }
  const fs::path pub = fs::path(*io.env.home) / ".ssh" / "id_ed25519.pub";
  std::error_code ec;
  if (!fs::is_regular_file(pub, ec)) return;
  const app::LoadedPlugins none;
  if (!runtime::TrustedVerifierRegistry(state, none).registrations().empty()) return;
  std::string fingerprint;
  try {
    fingerprint = read_trust_key(pub).fingerprint;
  } catch (const Error&) {
    return;  // not a key consent trust takes: nothing to offer
  }
  io.err << "ctx: trust your SSH key " << pub.string() << " (" << fingerprint
         << ") to sign your install consent decisions? [y/N] " << std::flush;
  std::string answer;
  std::getline(io.in, answer);
  if (answer == "y" || answer == "Y" || answer == "yes") {
    trust_key_file(state, pub, std::string(runtime::kStateConsentAudience), false, io.out);
  } else {
    io.err << "ctx: not trusted; later: ctx consent trust --key FILE\n";
  }
}

int run_consent_trust(const ConsentTrustOptions& options, const CommandIo& io) {
  const std::string audience =
      options.audience.value_or(std::string(runtime::kStateConsentAudience));
  std::ostream& out = io.out;
  if (options.key) {
    trust_key_file(command_state_dir(options.common.state, io.env), *options.key, audience,
                   options.common.json, out);
    return kExitOk;
  }

  const runtime::VerifierKey key{audience, options.authenticator, options.principal};
  const std::string& plugin_id = options.verifier;
  const core::Json config = read_config_file(options.config);
  const fs::path state = command_state_dir(options.common.state, io.env);
  const std::string identity = register_verifier(state, key, plugin_id, config);
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

int run_consent_keys(const ConsentKeysOptions& options, const CommandIo& io) {
  const fs::path state = command_state_dir(options.common.state, io.env);
  const app::LoadedPlugins none;
  const auto registrations = runtime::TrustedVerifierRegistry(state, none).registrations();
  std::ostream& out = io.out;
  if (options.common.json) {
    core::Json keys = core::Json::array();
    for (const auto& r : registrations) {
      const auto fingerprint = config_fingerprint(r.plugin_id, r.config);
      keys.push_back({{"fingerprint", fingerprint ? core::Json(*fingerprint) : core::Json()},
                      {"key_type", key_type_of(r)},
                      {"verifier", r.plugin_id},
                      {"audience", r.key.audience},
                      {"authenticator_id", r.key.authenticator_id},
                      {"principal_digest", r.key.principal_digest}});
    }
    out << core::canonical_json(core::Json{{"keys", std::move(keys)}}) << "\n";
    return kExitOk;
  }
  if (registrations.empty()) {
    out << "no decision key is trusted (ctx consent trust --key FILE)\n";
    return kExitOk;
  }
  for (const auto& r : registrations) {
    out << config_fingerprint(r.plugin_id, r.config).value_or("(no public key)") << " "
        << key_type_of(r) << ": audience " << r.key.audience << ", authenticator "
        << r.key.authenticator_id << ", principal " << r.key.principal_digest << ", verifier "
        << r.plugin_id << "\n";
  }
  return kExitOk;
}

int run_consent_untrust(const ConsentUntrustOptions& options, const CommandIo& io) {
  if (!is_fingerprint(options.fingerprint)) {
    throw InvalidArgument(
        "FINGERPRINT must be SHA256: and 43 base64 characters, as ctx consent "
        "keys prints it");
  }
  const fs::path state = command_state_dir(options.common.state, io.env);
  const app::LoadedPlugins none;
  runtime::TrustedVerifierRegistry registry(state, none);
  std::vector<runtime::VerifierKey> keys;
  for (const auto& r : registry.registrations()) {
    if (config_fingerprint(r.plugin_id, r.config) == options.fingerprint) keys.push_back(r.key);
  }
  if (keys.empty()) {
    throw NotFound("no trusted key has fingerprint " + options.fingerprint +
                   " (ctx consent keys lists them)");
  }
  registry.remove(keys);
  if (options.common.json) {
    io.out << core::canonical_json(
                  core::Json{{"fingerprint", options.fingerprint}, {"removed", keys.size()}})
           << "\n";
  } else {
    io.out << "untrusted " << options.fingerprint << " (" << keys.size() << " registration"
           << (keys.size() == 1 ? "" : "s") << ")\n";
  }
  return kExitOk;
}

}  // namespace ctx::cli

namespace ctx::cli {

int run_consent_approvals(const ConsentApprovalsOptions& options, const CommandIo& io) {
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  auto state = runtime::StateService::open(state_dir);
  const auto approvals = state->approvals();
  if (options.common.json) {
    core::Json list = core::Json::array();
    for (const auto& [id, a] : approvals) {
      list.push_back(core::Json{{"approved_at", a.approved_at},
                                {"capability_id", id},
                                {"content_sha256", a.content_sha256},
                                {"kind", a.kind}});
    }
    io.out << core::canonical_json(core::Json{{"approvals", std::move(list)}}) << "\n";
    return kExitOk;
  }
  if (approvals.empty()) {
    io.out << "no install is approved\n";
    return kExitOk;
  }
  for (const auto& [id, a] : approvals) {
    io.out << id << "  approved " << a.approved_at << "  content " << a.content_sha256.substr(0, 12)
           << "\n";
  }
  return kExitOk;
}

int run_consent_revoke(const ConsentRevokeOptions& options, const CommandIo& io) {
  if (!engine::is_capability_name(options.name) && !engine::is_canonical_token(options.name)) {
    throw InvalidArgument("NAME must be a capability name (pdf-export) or id (skill:pdf-export)");
  }
  const fs::path state_dir = command_state_dir(options.common.state, io.env);
  auto state = runtime::StateService::open(state_dir);
  std::vector<std::string> named;
  for (const auto& [id, a] : state->approvals()) {
    const std::string name = id.substr(id.find(':') + 1);
    if (id == options.name || name == options.name) named.push_back(id);
  }
  if (named.empty()) {
    throw NotFound("no install of " + options.name +
                   " is approved (ctx consent approvals lists them)");
  }
  if (named.size() > 1) {
    std::string ids;
    for (const auto& id : named) ids += (ids.empty() ? "" : ", ") + id;
    throw InvalidArgument("approvals of several kinds are named " + options.name + " (" + ids +
                          "): name one by its id");
  }
  const bool revoked = state->revoke_approval(named.front());
  if (options.common.json) {
    io.out << core::canonical_json(
                  core::Json{{"capability_id", named.front()}, {"revoked", revoked}})
           << "\n";
  } else {
    io.out << "revoked the approval of " << named.front()
           << ": the next plan that wants it asks for consent again\n";
  }
  return kExitOk;
}

}  // namespace ctx::cli
