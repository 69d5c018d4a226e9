// The signed-consent parts of seed 001's _setup (test_managed_query_service.py) on top of the
// installable ServiceSetup (whose skill-installer actuator and _BodySource it uses): the real
// consent broker behind a ConsentBrokerPort that can forbid the lookups a seed proves are never
// reached, the trusted verifier registry over a real verifier module (optionally with a hook
// that runs once after the module verified), and the seeds' _prepare_public_consent /
// _consent_assertion_payload. Used by the consent-resolution seeds and bench/consent. Header-only;
// the doubles are thread-safe.
#ifndef CTX_TESTS_SUPPORT_RUNTIME_CONSENT_RESOLUTION_SUPPORT_HPP_
#define CTX_TESTS_SUPPORT_RUNTIME_CONSENT_RESOLUTION_SUPPORT_HPP_

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "host/app/installation.hpp"
#include "host/core/crypto.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/consent/consent_broker.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"

namespace ctx::testing::service {

using ::ctx::runtime::ConsentBrokerPort;
using ::ctx::runtime::ConsentRecord;
using ::ctx::runtime::ConsentChallenge;
using ::ctx::runtime::VerifiedHumanDecision;
using ::ctx::runtime::VerifierDirectory;
using ::ctx::runtime::ConsentDecisionGuard;
using ::ctx::runtime::DecisionEvidencePort;
using ::ctx::runtime::ConsentReconciliation;
using ::ctx::runtime::PinnedVerifier;
using ::ctx::runtime::VerifierKey;
using ::ctx::runtime::TrustedVerifierRegistry;
using ::ctx::runtime::ManagedQueryServiceOptions;
using ::ctx::runtime::ManagedQueryService;
using ::ctx::runtime::ManagedDesiredSetResult;
using ::ctx::runtime::ManagedQueryRequest;
using ::ctx::runtime::ManagedDesiredSetRequest;
using ::ctx::runtime::ManagedDesiredStatus;
using ::ctx::runtime::ManagedConsentChallengeProjection;
using ::ctx::runtime::SignedAssertionClaims;
using ::ctx::runtime::SignedAssertion;
using ::ctx::runtime::InstallConsentPolicy;
using ::ctx::runtime::ConsentBroker;
using ::ctx::runtime::encode_signed_assertion;
using ::ctx::runtime::open_managed_query_service;

// CONSENT_TEST_SECRET of the seed, as the hmac-sha256 verifier's key.
inline const std::string kConsentSecret = digest("managed-consent-test-secret");
inline const std::string kPrincipal = digest("managed-test-principal");
inline constexpr const char* kAuthenticator = "managed-test-authenticator";

inline std::string raw_bytes(const std::string& hex) {
  std::string raw;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return raw;
}

// The real broker behind a port that can forbid the lookups a seed proves are never reached.
class WatchedBroker final : public ConsentBrokerPort {
 public:
  explicit WatchedBroker(std::shared_ptr<ConsentBroker> broker) : broker_(std::move(broker)) {}
  const std::filesystem::path& path() const noexcept override { return broker_->path(); }
  const std::string& audience() const noexcept override { return broker_->audience(); }
  ConsentRecord prepare(const ConsentChallenge& challenge) override {
    return broker_->prepare(challenge);
  }
  ConsentRecord status(std::string_view id) override { return broker_->status(id); }
  ConsentRecord status_by_challenge_digest(std::string_view digest) override {
    if (forbid_lookup) {
      throw std::logic_error("broker lookup must follow trusted verifier selection");
    }
    return broker_->status_by_challenge_digest(digest);
  }
  VerifiedHumanDecision authenticate(const ConsentChallenge& current, std::string_view payload,
                                     VerifierDirectory& verifiers) override {
    if (forbid_authenticate) throw std::logic_error("authentication must not be reached");
    return broker_->authenticate(current, payload, verifiers);
  }
  ConsentDecisionGuard interactive_guard(const VerifiedHumanDecision& decision,
                                         std::string_view binding) override {
    return broker_->interactive_guard(decision, binding);
  }
  ConsentReconciliation reconcile(std::string_view id, DecisionEvidencePort& evidence) override {
    return broker_->reconcile(id, evidence);
  }
  std::atomic<bool> forbid_lookup{false};
  std::atomic<bool> forbid_authenticate{false};

 private:
  std::shared_ptr<ConsentBroker> broker_;
};

// A real verifier module behind a port that runs a hook once after it decided (the seed's
// "authenticate, then replace the target").
class HookedVerifier final : public engine::VerifierPort {
 public:
  HookedVerifier(std::shared_ptr<engine::VerifierPort> real, std::function<void()> hook)
      : real_(std::move(real)), hook_(std::move(hook)) {}
  engine::Verdict verify(std::string_view assertion, std::string_view bytes) override {
    const auto verdict = real_->verify(assertion, bytes);
    if (hook_) std::exchange(hook_, nullptr)();
    return verdict;
  }
  std::string id() const override { return real_->id(); }
  std::string identity_digest() const override { return real_->identity_digest(); }

 private:
  std::shared_ptr<engine::VerifierPort> real_;
  std::function<void()> hook_;
};

// The trusted registry (persisted, pinned verifier module); with a hook, the same pinned module
// wrapped in HookedVerifier. Counts lookups.
class Verifiers final : public VerifierDirectory {
 public:
  // Registers the seed's principal with the loaded verifier plugin `plugin_id` and `config`.
  Verifiers(std::filesystem::path state, std::shared_ptr<::ctx::app::LoadedPlugins> plugins,
            std::string plugin_id, core::Json config)
      : plugins_(std::move(plugins)),
        registry_(std::move(state), *plugins_),
        plugin_id_(std::move(plugin_id)),
        config_(std::move(config)) {
    registry_.add(key(), plugin_id_, config_);
  }
  static VerifierKey key() { return {std::string(kConsentAudience), kAuthenticator, kPrincipal}; }
  std::shared_ptr<const PinnedVerifier> resolve(const VerifierKey& wanted) override {
    ++resolve_calls;
    auto pinned = registry_.resolve(wanted);
    if (hook && !hooked_) {
      auto plugin = plugins_->registry().get(plugins::PluginKind::kVerifier, plugin_id_);
      auto real = std::make_shared<plugins::AbiVerifier>(plugin, config_.dump());
      hooked_ = std::make_shared<const PinnedVerifier>(
          wanted, pinned->identity_digest(),
          std::make_shared<HookedVerifier>(std::move(real), std::exchange(hook, nullptr)));
    }
    return hooked_ ? hooked_ : pinned;
  }
  // Runs once, right after the pinned module verified the next signature.
  std::function<void()> hook;
  std::atomic<int> resolve_calls{0};

 private:
  std::shared_ptr<::ctx::app::LoadedPlugins> plugins_;
  TrustedVerifierRegistry registry_;
  std::string plugin_id_;
  core::Json config_;
  std::shared_ptr<const PinnedVerifier> hooked_;
};

struct ConsentSeed {
  ServiceSetup setup;
  std::shared_ptr<WatchedBroker> broker;
  std::shared_ptr<Verifiers> verifiers;

  std::filesystem::path skill_root() const { return setup.consent->skill_root; }
  ManagedQueryServiceOptions options() const {
    auto options = setup.service_options();
    options.consent_broker = broker;
    options.verifier_registry = verifiers;
    return options;
  }
  // The seeds' _open_peer_service.
  std::shared_ptr<ManagedQueryService> peer() const {
    auto options = this->options();
    options.trusted_clock = std::make_shared<FixedClock>(kNow);
    return open_managed_query_service(std::move(options));
  }
  ManagedQueryService& service() const { return *setup.service; }
  BodySource& bodies() const { return *setup.consent->body_source; }
  int load_calls() const { return bodies().load_calls(); }
};

// The seeds' _setup(tmp_path, requested_limit=1, installable=True) with the signed-consent
// authorities: the verifier registry (the verifier module at `verifier_so`, registered as
// `plugin_id` with `config`) over the setup's skill-installer actuator and body source (serving
// `tree` when given, SetupArgs::tree).
inline ConsentSeed consent_seed(
    const std::filesystem::path& tmp, const char* verifier_so, const std::string& plugin_id,
    const core::Json& config,
    std::optional<std::vector<runtime::InstallBodyFile>> tree = std::nullopt) {
  SetupArgs args;
  args.requested_limit = 1;
  args.installable = true;
  args.tree = std::move(tree);
  ConsentSeed seed{make_setup(tmp, args), nullptr, nullptr};
  auto& consent = *seed.setup.consent;
  consent.plugins->add(consent.loader->load(consent.loader->inspect_for_pin(verifier_so)));
  seed.broker = std::make_shared<WatchedBroker>(consent.broker);
  std::filesystem::create_directory(tmp / "private" / "verifiers");
  std::filesystem::permissions(tmp / "private" / "verifiers", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  seed.verifiers = std::make_shared<Verifiers>(tmp / "private" / "verifiers", consent.plugins,
                                               plugin_id, config);
  seed.setup.service->close();
  seed.setup.service = open_managed_query_service(seed.options());
  return seed;
}

// The seeds' _prepare_public_consent.
inline ManagedDesiredSetResult prepare_public_consent(ConsentSeed& seed, const std::string& label) {
  seed.setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto prepared =
      seed.service().prepare(ManagedQueryRequest::create(digest(label + ":query"), "work-one"));
  const std::string capability = prepared.prepared().selections().at(0).capability_id();
  auto result = seed.service().set_desired(ManagedDesiredSetRequest::create(
      prepared.query_ref(), digest(label + ":desired"), {capability}));
  if (result.status() != ManagedDesiredStatus::kConsentRequired || !result.challenge()) {
    throw std::logic_error("the seed's desired choice did not publish a consent challenge");
  }
  return result;
}

struct AssertionArgs {
  engine::Decision decision = engine::Decision::kGranted;
  std::string nonce = "managed-consent-nonce-1";
  std::string principal_digest = kPrincipal;
  std::string audience = std::string(kConsentAudience);
  std::string issued_at = "2026-08-03T12:00:00Z";
  std::string expires_at = "2026-08-03T12:30:00Z";
  bool valid_proof = true;
};

// The seeds' _consent_assertion_payload: the wire payload; proof = `sign(signing bytes)`
// (by default HMAC-SHA256 under the test secret, as the seed signs).
inline std::string assertion_payload(
    const ManagedConsentChallengeProjection& challenge, AssertionArgs args = {},
    const std::function<std::string(const std::string&)>& sign = nullptr) {
  SignedAssertionClaims claims;
  claims.challenge_digest = challenge.challenge_digest();
  claims.decision = args.decision;
  claims.principal_digest = args.principal_digest;
  claims.authenticator_id = kAuthenticator;
  claims.audience = args.audience;
  claims.nonce = args.nonce;
  claims.issued_at = args.issued_at;
  claims.expires_at = args.expires_at;
  claims.proof = "unsigned";
  const std::string bytes = SignedAssertion::create(claims).signing_bytes();
  const auto mac = core::hmac_sha256(raw_bytes(kConsentSecret), bytes);
  const std::string proof = sign ? sign(bytes) : std::string(mac.begin(), mac.end());
  claims.proof = args.valid_proof ? proof : "invalid-proof";
  return encode_signed_assertion(SignedAssertion::create(std::move(claims)));
}

}  // namespace ctx::testing::service

#endif  // CTX_TESTS_SUPPORT_RUNTIME_CONSENT_RESOLUTION_SUPPORT_HPP_
