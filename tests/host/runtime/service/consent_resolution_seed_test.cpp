// Seed 001 (test_managed_query_service.py): the signed-consent seeds of resolve_consent and
// recover_consent, one GoogleTest case per seed test (names from seed-tests.tsv). The decision is
// published by set_desired through the real consent broker, signed with HMAC-SHA256 and verified
// by the real hmac-sha256 verifier module; installs run through the real skill-installer module.
// Crashes go through the named crash points, and failures or changes at one broker store operation
// through the setup's FaultyConsentStore (the seeds' patched broker store); the concurrency seed
// races two services on real threads behind a std::barrier. Where the Python seed monkeypatches a
// broker method to prove it is never reached, the broker is wrapped in a counting
// ConsentBrokerPort.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <typeinfo>

#include "host/app/wire.hpp"
#include "host/plugins/abi_adapters.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/install_execution.hpp"
#include "host/runtime/service/consent_resolution_crash_points.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/runtime/consent_resolution_support.hpp"
#include "tests/support/runtime/exact_fields.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::FaultyConsentStore;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)
using ::testing::HasSubstr;

// The seeds' setup: the hmac-sha256 verifier module keyed with the seed's CONSENT_TEST_SECRET.
ConsentSeed consent_seed(const std::filesystem::path& tmp) {
  return ::ctx::testing::service::consent_seed(tmp, CTX_CONSENT_HMAC_SO, "hmac-sha256",
                                               core::Json{{"key_hex", kConsentSecret}});
}

template <typename T>
std::string printed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

template <typename T>
constexpr bool kSealed = !std::is_default_constructible_v<T> && !std::is_copy_constructible_v<T> &&
                         !std::is_copy_assignable_v<T> && !std::is_move_assignable_v<T> &&
                         !std::is_constructible_v<core::Json, const T&>;
template <typename T>
concept HasScope = requires(const T& r) { r.scope(); };
template <typename T>
concept HasChallengeId = requires(const T& r) { r.challenge_id(); };
template <typename T>
concept HasBinding = requires(const T& r) { r.binding(); };
template <typename T>
concept HasDriver = requires(const T& r) { r.driver(); };
template <typename T>
concept HasVerifier = requires(const T& r) { r.verifier(); };
template <typename T>
concept HasProof = requires(const T& r) { r.proof(); };
template <typename T>
concept HasPrincipal = requires(const T& r) { r.principal_digest(); };

std::vector<engine::JournalRecord> journal_records(const ConsentSeed& seed) {
  store::SqliteJournalStore journal(seed.setup.journal_path, *seed.setup.clock);
  return journal.read(seed_scope().stream_id(), 0);
}

std::size_t count_events(const ConsentSeed& seed, const std::string& kind) {
  std::size_t count = 0;
  for (const auto& record : journal_records(seed)) {
    if (engine::ReplayInput::from_json_text(record.replay_json).reducer_event.kind() == kind) {
      ++count;
    }
  }
  return count;
}

ConsentRecord broker_record(const ConsentSeed& seed, const ManagedDesiredSetResult& desired) {
  return seed.setup.consent->broker->status_by_challenge_digest(
      desired.challenge()->challenge_digest());
}

// Renames the skill root aside and recreates an empty one (a replaced install target).
struct DisplacedRoot {
  DisplacedRoot(const std::filesystem::path& root, const std::string& aside)
      : root_(root), aside_(root.parent_path() / aside) {
    std::filesystem::rename(root_, aside_);
    std::filesystem::create_directory(root_);
    std::filesystem::permissions(root_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace);
  }
  void restore() {
    std::filesystem::remove(root_);
    std::filesystem::rename(aside_, root_);
  }
  std::filesystem::path root_;
  std::filesystem::path aside_;
};

// The broker's settle write (the challenge row updated to settled) runs `fault` instead, once,
// while this object lives: the seeds' scoped patch of the broker store's _settle.
class ScopedStoreFault {
 public:
  ScopedStoreFault(const ConsentSeed& seed, std::function<void()> fault)
      : store_(*seed.setup.consent->consent_store), before_(store_.faults_fired()) {
    store_.fail_next(FaultyConsentStore::Op::kUpdateChallenge, std::move(fault),
                     FaultyConsentStore::to_state(ConsentState::kSettled));
  }
  ~ScopedStoreFault() { store_.disarm(); }
  ScopedStoreFault(const ScopedStoreFault&) = delete;
  ScopedStoreFault& operator=(const ScopedStoreFault&) = delete;
  int fired() const { return store_.faults_fired() - before_; }

 private:
  FaultyConsentStore& store_;
  int before_;
};

// ---------------------------------------------------------------------------------------------

TEST(ManagedConsentSeed, service_resolves_signed_grant_and_recovers_installed_inactive) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-consent");
  const auto& challenge = *desired.challenge();
  const auto result = seed.service().resolve_consent(assertion_payload(challenge));
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(result.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(result.reason_code(), "physical-install-applied");
  EXPECT_EQ(recovered.reason_code(), "physical-install-applied");
  EXPECT_FALSE(result.next_challenge().has_value());
  EXPECT_FALSE(recovered.next_challenge().has_value());
  EXPECT_EQ(result.capability_id(), challenge.capability_id());
  EXPECT_EQ(result.kind(), challenge.kind());
  EXPECT_EQ(result.challenge_digest(), challenge.challenge_digest());
  EXPECT_GE(result.journal_revision(), desired.journal_revision() + 2);
  EXPECT_EQ(result.journal_record_digest().size(), 64U);
  EXPECT_EQ(seed.load_calls(), 1);
  EXPECT_THAT(printed(result), ::testing::Not(HasSubstr(tmp.path().string())));
  // Exactly the seed's nine fields: accessors, object and wire form.
  static_assert(ConsentResolutionAccessors<ManagedConsentResolutionResult> &&
                kHoldsExactly<ManagedConsentResolutionResult, ConsentResolutionFields>);
  EXPECT_EQ(keys_of(consent_result_json(result)),
            (std::set<std::string>{"actions", "capability_id", "challenge_digest",
                                   "journal_record_digest", "journal_revision", "kind",
                                   "next_challenge", "outcome", "reason_code"}));
  static_assert(kSealed<ManagedConsentResolutionResult>);
  static_assert(!HasScope<ManagedConsentResolutionResult> &&
                !HasChallengeId<ManagedConsentResolutionResult> &&
                !HasDriver<ManagedConsentResolutionResult> &&
                !HasBinding<ManagedConsentResolutionResult> &&
                !HasVerifier<ManagedConsentResolutionResult> &&
                !HasProof<ManagedConsentResolutionResult> &&
                !HasPrincipal<ManagedConsentResolutionResult>);
}

TEST(ManagedConsentSeed, service_signed_denial_never_invokes_install_driver) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-denial");
  const auto& challenge = *desired.challenge();
  AssertionArgs denial;
  denial.decision = engine::Decision::kDenied;
  denial.nonce = "managed-consent-denial";
  const auto result = seed.service().resolve_consent(assertion_payload(challenge, denial));
  DisplacedRoot displaced(seed.skill_root(), "skills-denial-recovery-displaced");
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(result.outcome(), ManagedConsentOutcome::kDenied);
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kDenied);
  EXPECT_EQ(result.reason_code(), "human-denied-install");
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_claims"), 0);
  displaced.restore();
}

TEST(ManagedConsentSeed,
     signed_grant_expired_before_claim_is_retired_once_and_can_be_chosen_again) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-expired-before-claim");
  const auto& challenge = *desired.challenge();
  {
    CrashPointArmed crash(consent_crash_points::kAfterDecisionCommit);
    EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), SimulatedCrash);
    ASSERT_TRUE(crash.fired());
  }
  seed.setup.clock->set("2026-08-03T14:00:00Z");
  const auto expired = seed.service().recover_consent(challenge.challenge_digest());
  const auto repeated = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(expired.outcome(), ManagedConsentOutcome::kExpired);
  EXPECT_EQ(repeated.outcome(), ManagedConsentOutcome::kExpired);
  EXPECT_EQ(expired.reason_code(), "install-approval-expired-before-claim");
  EXPECT_EQ(expired.journal_revision(), desired.journal_revision() + 2);
  EXPECT_EQ(repeated.journal_revision(), desired.journal_revision() + 2);
  EXPECT_EQ(expired.journal_record_digest(), repeated.journal_record_digest());
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_claims"), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_outcomes"), 0);
  EXPECT_EQ(count_events(seed, "ActionExpired"), 1U);
  const auto next_choice = seed.service().set_desired(ManagedDesiredSetRequest::create(
      desired.query_ref(), digest("signed-expired-before-claim-next-choice"),
      {challenge.capability_id()}, desired.desired_set_ref()));
  EXPECT_EQ(next_choice.status(), ManagedDesiredStatus::kConsentRequired);
  ASSERT_TRUE(next_choice.challenge().has_value());
  EXPECT_NE(next_choice.challenge()->challenge_digest(), challenge.challenge_digest());
}

TEST(ManagedConsentSeed,
     signed_grant_claimed_before_ttl_reconciles_after_ttl_without_reapply_or_expiry) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-claimed-before-expiry");
  const auto& challenge = *desired.challenge();
  {
    CrashPointArmed crash(crash_points::kAfterInstallClaim);
    EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), SimulatedCrash);
    ASSERT_TRUE(crash.fired());
  }
  seed.setup.clock->set("2026-08-03T14:00:00Z");
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kInstallFailed);
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_claims"), 1);
  EXPECT_EQ(count_events(seed, "ActionExpired"), 0U);
}

TEST(ManagedConsentSeed, service_recovery_never_mints_decision_after_precommit_crash) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "precommit-crash");
  const auto& challenge = *desired.challenge();
  {
    CrashPointArmed crash(consent_crash_points::kAfterAuthentication);
    EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), SimulatedCrash);
    ASSERT_TRUE(crash.fired());
  }
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kReauthenticationRequired);
  ASSERT_TRUE(recovered.next_challenge().has_value());
  EXPECT_EQ(*recovered.next_challenge(), challenge);
  EXPECT_EQ(seed.load_calls(), 0);
  AssertionArgs fresh;
  fresh.nonce = "managed-consent-fresh-after-crash";
  const auto resolved = seed.service().resolve_consent(assertion_payload(challenge, fresh));
  EXPECT_EQ(resolved.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(seed.load_calls(), 1);
}

TEST(ManagedConsentSeed, service_recovers_commit_before_broker_settle_without_reauthentication) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "postcommit-crash");
  const auto& challenge = *desired.challenge();
  {
    // The seed's patched SQLiteInstallConsentBrokerStore._settle: the broker store's settle
    // write fails after the journal committed the decision; resolve_consent reports the guard's
    // settlement failure.
    ScopedStoreFault failing(
        seed, [] { throw std::runtime_error("simulated crash before broker settle"); });
    CTX_EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), std::exception,
                     "guard settlement failed");
    ASSERT_EQ(failing.fired(), 1);
  }
  EXPECT_NE(broker_record(seed, desired).state, ConsentState::kSettled);
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(seed.load_calls(), 1);
}

TEST(ManagedConsentSeed, decision_ready_grant_recovery_after_challenge_ttl_needs_no_live_target) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "decision-ready-expired-grant");
  const auto& challenge = *desired.challenge();
  {
    ScopedStoreFault failing(seed,
                             [] { throw std::runtime_error("simulated decision-ready crash"); });
    CTX_EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), std::exception,
                     "guard settlement failed");
    ASSERT_EQ(failing.fired(), 1);
  }
  seed.setup.clock->set("2026-08-03T14:00:00Z");
  DisplacedRoot displaced(seed.skill_root(), "skills-decision-ready-expired-displaced");
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  seed.setup.persist_policy(preapproved);
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kExpired);
  EXPECT_EQ(recovered.reason_code(), "install-approval-expired-before-claim");
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_claims"), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_outcomes"), 0);
  displaced.restore();
}

TEST(ManagedConsentSeed, service_rejects_unknown_human_identity_before_state_or_driver_access) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "wrong-human");
  seed.broker->forbid_lookup = true;
  AssertionArgs stranger;
  stranger.principal_digest = digest("unregistered-principal");
  EXPECT_THROW(
      seed.service().resolve_consent(assertion_payload(*desired.challenge(), stranger)),
      UnknownHumanDecisionVerifier);
  EXPECT_EQ(seed.load_calls(), 0);
}

TEST(ManagedConsentSeed, service_target_drift_does_not_burn_signed_assertion) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "target-drift");
  const auto payload = assertion_payload(*desired.challenge());
  DisplacedRoot displaced(seed.skill_root(), "skills-displaced");
  CTX_EXPECT_THROW(seed.service().resolve_consent(payload), std::exception, "root changed");
  displaced.restore();
  const auto result = seed.service().resolve_consent(payload);
  EXPECT_EQ(result.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(seed.load_calls(), 1);
}

TEST(ManagedConsentSeed,
     target_replacement_after_authentication_never_reaches_broker_guard_or_driver) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "post-auth-target-drift");
  const auto& challenge = *desired.challenge();
  std::optional<DisplacedRoot> displaced;
  seed.verifiers->hook = [&] {
    displaced.emplace(seed.skill_root(), "skills-post-auth-displaced");
  };
  CTX_EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)),
                       std::exception, "root changed");
  ASSERT_TRUE(displaced.has_value());
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_claims"), 0);
  EXPECT_EQ(sqlite_scalar(seed.setup.journal_path,
                          "SELECT count(*) FROM engine_journal WHERE event_id LIKE "
                          "'ctx-interactive-install:%'"),
            "0");
  displaced->restore();
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kReauthenticationRequired);
  ASSERT_TRUE(recovered.next_challenge().has_value());
  EXPECT_EQ(*recovered.next_challenge(), challenge);
}

TEST(ManagedConsentSeed,
     target_replacement_after_decision_commit_never_reaches_claim_or_driver) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "post-commit-target-drift");
  const auto& challenge = *desired.challenge();
  // The install root is replaced once the decision is committed and the broker settled it,
  // inside the same resolve_consent (the seed's patched _finish_settled_consent, which runs right
  // after the settlement): that call fails closed.
  std::optional<DisplacedRoot> displaced;
  {
    auto& store = *seed.setup.consent->consent_store;
    store.after_commit(
        FaultyConsentStore::Op::kUpdateChallenge,
        [&] { displaced.emplace(seed.skill_root(), "skills-post-commit-displaced"); },
        FaultyConsentStore::to_state(ConsentState::kSettled));
    CTX_EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), std::exception,
                     "root changed");
    ASSERT_EQ(store.hooks_fired(), 1);
    store.disarm();
  }
  ASSERT_TRUE(displaced.has_value());
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_claims"), 0);
  EXPECT_EQ(sqlite_count(seed.setup.journal_path, "engine_install_outcomes"), 0);
  displaced->restore();
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(seed.load_calls(), 1);
}

TEST(ManagedConsentSeed, service_policy_drift_does_not_burn_signed_assertion) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-policy-drift");
  const auto payload = assertion_payload(*desired.challenge());
  InstallConsentPolicy preapproved;
  preapproved.skill_mode = InstallMode::kPreapprovedAuto;
  seed.setup.persist_policy(preapproved);
  CTX_EXPECT_THROW(seed.service().resolve_consent(payload), ManagedQueryHeadDriftError,
                       "policy changed");
  seed.setup.persist_policy(InstallConsentPolicy::safe_default());
  const auto result = seed.service().resolve_consent(payload);
  EXPECT_EQ(result.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(seed.load_calls(), 1);
}

TEST(ManagedConsentSeed, concurrent_signed_resolution_executes_install_at_most_once) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-concurrency");
  const auto payload = assertion_payload(*desired.challenge());
  const auto peer = seed.peer();
  std::barrier start(2);
  std::vector<std::string> outcomes(2);
  auto resolve = [&](ManagedQueryService& service, std::size_t slot) {
    start.arrive_and_wait();
    try {
      outcomes[slot] = std::string(to_string(service.resolve_consent(payload).outcome()));
    } catch (const ManagedQueryServiceError&) {
      outcomes[slot] = "already-consumed";
    }
  };
  std::thread left(resolve, std::ref(seed.service()), 0);
  std::thread right(resolve, std::ref(*peer), 1);
  left.join();
  right.join();
  std::sort(outcomes.begin(), outcomes.end());
  EXPECT_EQ(outcomes, (std::vector<std::string>{"already-consumed", "installed-inactive"}));
  EXPECT_EQ(seed.load_calls(), 1);
  EXPECT_EQ(seed.service().recover_consent(desired.challenge()->challenge_digest()).outcome(),
            ManagedConsentOutcome::kInstalledInactive);
}

TEST(ManagedConsentSeed, pending_consent_recovery_requires_no_verifier_or_authentication) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "pending-recovery");
  seed.broker->forbid_authenticate = true;
  const auto recovered = seed.service().recover_consent(desired.challenge()->challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kConsentRequired);
  EXPECT_EQ(recovered.reason_code(), "fresh-human-decision-required");
  ASSERT_TRUE(recovered.next_challenge().has_value());
  EXPECT_EQ(*recovered.next_challenge(), *desired.challenge());
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(seed.verifiers->resolve_calls, 0);
}

TEST(ManagedConsentSeed, wrong_assertion_audience_is_rejected_before_broker_lookup) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "wrong-audience");
  seed.broker->forbid_lookup = true;
  AssertionArgs other;
  other.audience = "wrong-managed-audience";
  CTX_EXPECT_THROW(
      seed.service().resolve_consent(assertion_payload(*desired.challenge(), other)),
      ManagedQueryServiceError, "audience");
  EXPECT_EQ(seed.load_calls(), 0);
  EXPECT_EQ(seed.verifiers->resolve_calls, 0);
}

// Every durable byte the consent decision could touch (database files and their WAL).
struct DurableBytes {
  std::vector<std::string> files;
  std::vector<engine::JournalRecord> records;
  friend bool operator==(const DurableBytes&, const DurableBytes&) = default;
};

DurableBytes durable_bytes(const ConsentSeed& seed) {
  DurableBytes bytes;
  bytes.records = journal_records(seed);  // first: closing its connection may checkpoint
  for (const auto& path : {seed.setup.consent->consent_store_path, seed.setup.journal_path}) {
    for (const char* suffix : {"", "-wal"}) {
      const std::filesystem::path file = path.string() + suffix;
      bytes.files.push_back(std::filesystem::exists(file) ? file_bytes(file) : "<absent>");
    }
  }
  return bytes;
}

// Passes only when `fn` throws exactly `T` (not a subclass, not a base).
template <typename T, typename Fn>
::testing::AssertionResult throws_exactly(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    if (typeid(e) == typeid(T)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "threw " << typeid(e).name() << ": " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// The seed's parametrized failures ("signature", "expired"), plus every codec rejection of spec
// §5.6 (a typed error before any broker lookup): the consent store and journal stay
// byte-identical and the broker record stays pending.
TEST(ManagedConsentSeed, invalid_signed_assertion_does_not_mutate_consent_or_journal) {
  for (const std::string failure : {"signature", "expired"}) {
    SCOPED_TRACE(failure);
    TempDir tmp;
    auto seed = consent_seed(tmp.path());
    const auto desired = prepare_public_consent(seed, "invalid-" + failure);
    const auto before = durable_bytes(seed);
    AssertionArgs args;
    args.nonce = "invalid-" + failure + "-nonce";
    args.valid_proof = failure != "signature";
    if (failure == "expired") {
      args.issued_at = "2026-08-03T11:00:00Z";
      args.expires_at = "2026-08-03T11:30:00Z";
    }
    const auto payload = assertion_payload(*desired.challenge(), args);
    if (failure == "signature") {
      EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
          [&] { seed.service().resolve_consent(payload); }));
    } else {
      EXPECT_TRUE(
          throws_exactly<ConsentBrokerExpired>([&] { seed.service().resolve_consent(payload); }));
    }
    EXPECT_EQ(broker_record(seed, desired).state, ConsentState::kPending);
    EXPECT_EQ(durable_bytes(seed), before);
    EXPECT_EQ(seed.load_calls(), 0);
  }

  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "invalid-codec");
  const std::string valid = assertion_payload(*desired.challenge());
  const auto before = durable_bytes(seed);
  seed.broker->forbid_lookup = true;
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = valid;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, AssertionRejection>> cases = {
      {"", AssertionRejection::kInvalidSize},
      {std::string(kMaxSignedAssertionBytes + 1, ' '), AssertionRejection::kInvalidSize},
      {"{\"audience\":\"\xff\"}", AssertionRejection::kInvalidUtf8},
      {"{\"audience\":", AssertionRejection::kInvalidJson},
      {edited("{\"audience\"", "{\"audience\":\"x\",\"audience\""),
       AssertionRejection::kDuplicateKey},
      {"{\"audience\":NaN}", AssertionRejection::kNonFiniteConstant},
      {"[]", AssertionRejection::kNotObject},
      {edited("{\"audience\"", "{\"extra\":1,\"audience\""), AssertionRejection::kWrongKeySet},
      {edited("ctx.signed-human-install-decision-v1", "ctx.signed-human-install-decision-v0"),
       AssertionRejection::kWrongSchema},
      {edited("\"proof_base64\":\"", "\"proof_base64\":\"!"),
       AssertionRejection::kNonCanonicalProof},
      {edited("\"decision\":\"granted\"", "\"decision\":\"maybe\""),
       AssertionRejection::kInvalidField},
      {edited("{\"audience\"", "{ \"audience\""), AssertionRejection::kNotCanonical},
  };
  std::set<AssertionRejection> seen;
  for (const auto& [payload, rejection] : cases) {
    SCOPED_TRACE(assertion_rejection_name(rejection));
    try {
      seed.service().resolve_consent(payload);
      ADD_FAILURE() << "accepted";
    } catch (const AssertionCodecError& error) {
      EXPECT_EQ(error.rejection(), rejection);
      seen.insert(error.rejection());
    }
    EXPECT_EQ(durable_bytes(seed), before);
  }
  EXPECT_EQ(seen.size(), 11U);  // every decode rejection (kTooLarge is the encoder's)
  EXPECT_EQ(broker_record(seed, desired).state, ConsentState::kPending);
  EXPECT_EQ(seed.verifiers->resolve_calls, 0);
  EXPECT_EQ(seed.load_calls(), 0);
}

TEST(ManagedConsentSeed, head_drift_is_rejected_before_broker_authentication) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-head-drift");
  const auto head = journal_records(seed).back();
  std::optional<engine::HostAction> request;
  const auto head_transition = engine::Transition::from_json_text(head.transition_json);
  for (const auto& action : head_transition.actions()) {
    if (action.action_kind() == engine::ActionKind::kRequestConsent) request.emplace(action);
  }
  ASSERT_TRUE(request.has_value());
  {  // the seeds' _commit_consent_decision: another writer commits the decision first
    ManagedCompositionOptions options;
    options.journal_path = seed.setup.journal_path;
    options.benefit_audit_path = seed.setup.audit_path;
    options.benefit_facts_port = seed.setup.facts;
    options.net_benefit_policy = seed.setup.policy;
    options.material_port = seed.setup.materials;
    options.install_bundle_port = seed.setup.installs;
    options.interactive_install_decision_guard = [](const auto&) {
      return std::function<void()>([] {});
    };
    options.trusted_clock = seed.setup.clock;
    auto composition = open_managed_engine_composition(*seed.setup.registry, seed.setup.artifact,
                                                       std::move(options));
    const auto& original = seed.setup.managed_input->decision_event();
    composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
      f.event_id = "event-managed-consent-race-decision";
      f.kind = "UserDecision";
      f.expected_revision = head.revision;
      f.occurred_at = "2026-08-03T12:01:00Z";
      f.payload = {{"consent_id", *request->consent_id()},
                   {"decision", "granted"},
                   {"decision_basis", "interactive"},
                   {"policy_snapshot_digest",
                    InstallConsentPolicy::safe_default().policy_digest()},
                   {"requested_action_id", request->payload().at("requested_action_id")},
                   {"requested_action_kind", request->payload().at("requested_action_kind")},
                   {"requested_action_content_digest",
                    request->payload().at("requested_action_content_digest")},
                   {"requested_action_precondition_revision",
                    request->payload().at("requested_action_precondition_revision")}};
    }));
    composition->close();
  }
  seed.broker->forbid_authenticate = true;
  CTX_EXPECT_THROW(seed.service().resolve_consent(assertion_payload(*desired.challenge())),
                       ManagedQueryHeadDriftError, "current pending");
  EXPECT_EQ(broker_record(seed, desired).state, ConsentState::kPending);
}

TEST(ManagedConsentSeed, signed_install_indeterminate_then_recovers_failed) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  seed.bodies().fail_next_loads(1);
  const auto desired = prepare_public_consent(seed, "signed-indeterminate");
  const auto& challenge = *desired.challenge();
  const auto indeterminate = seed.service().resolve_consent(assertion_payload(challenge));
  const auto failed = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(indeterminate.outcome(), ManagedConsentOutcome::kInstallIndeterminate);
  EXPECT_EQ(indeterminate.reason_code(), "physical-install-outcome-indeterminate");
  EXPECT_EQ(failed.outcome(), ManagedConsentOutcome::kInstallFailed);
  EXPECT_EQ(failed.reason_code(), "physical-install-failed");
  EXPECT_EQ(seed.load_calls(), 1);
}

TEST(ManagedConsentSeed, recovery_quarantines_decision_when_journal_head_advanced) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-quarantine");
  const auto& challenge = *desired.challenge();
  {
    CrashPointArmed crash(consent_crash_points::kAfterAuthentication);
    EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), SimulatedCrash);
    ASSERT_TRUE(crash.fired());
  }
  {
    auto composition = seed.setup.open_composition();
    const auto& original = seed.setup.managed_input->decision_event();
    composition->process(replace_event(original, [&](engine::EngineEvent::Fields& f) {
      f.event_id = "event-signed-consent-head-advanced";
      f.kind = "ProviderSubmissionObserved";
      f.expected_revision = desired.journal_revision();
      f.payload = {{"capabilities", core::Json::array()}};
    }));
    composition->close();
  }
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kQuarantined);
  EXPECT_EQ(recovered.reason_code(), "journal-head-advanced");
  EXPECT_FALSE(recovered.next_challenge().has_value());
  EXPECT_EQ(seed.load_calls(), 0);
}

TEST(ManagedConsentSeed, signed_recovery_after_receipt_crash_does_not_reinvoke_driver) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "signed-receipt-crash");
  const auto& challenge = *desired.challenge();
  {
    CrashPointArmed crash(crash_points::kAfterInstallReceipt);
    EXPECT_THROW(seed.service().resolve_consent(assertion_payload(challenge)), SimulatedCrash);
    ASSERT_TRUE(crash.fired());
  }
  const auto recovered = seed.service().recover_consent(challenge.challenge_digest());
  EXPECT_EQ(recovered.outcome(), ManagedConsentOutcome::kInstalledInactive);
  EXPECT_EQ(seed.load_calls(), 1);
}

// ---------------------------------------------------------------------------------------------
// The result factory (§3.1) and the outcome vocabulary (§3.2).

TEST(ManagedConsentResult, factory_enforces_next_challenge_and_identity_invariants) {
  TempDir tmp;
  auto seed = consent_seed(tmp.path());
  const auto desired = prepare_public_consent(seed, "result-factory");
  const auto& challenge = *desired.challenge();
  const std::string record = digest("record");
  auto next = [&] {
    return std::optional<ManagedConsentChallengeProjection>(
        ManagedConsentChallengeProjection::of(broker_record(seed, desired).challenge));
  };
  auto make = [&](ManagedConsentOutcome outcome, std::optional<ManagedConsentChallengeProjection>
                                                     projection,
                  std::string digest_value, std::string capability) {
    return ManagedConsentResolutionResult::create(
        std::move(digest_value), std::move(capability), engine::CapabilityKind::kSkill, outcome,
        "reason-code", std::move(projection), {}, 4, record);
  };
  EXPECT_NO_THROW(make(ManagedConsentOutcome::kConsentRequired, next(),
                       challenge.challenge_digest(), challenge.capability_id()));
  EXPECT_NO_THROW(make(ManagedConsentOutcome::kReauthenticationRequired, next(),
                       challenge.challenge_digest(), challenge.capability_id()));
  EXPECT_NO_THROW(make(ManagedConsentOutcome::kDenied, std::nullopt, challenge.challenge_digest(),
                       challenge.capability_id()));
  CTX_EXPECT_THROW(make(ManagedConsentOutcome::kConsentRequired, std::nullopt,
                        challenge.challenge_digest(), challenge.capability_id()),
                   ManagedQueryServiceError, "next challenge");
  CTX_EXPECT_THROW(make(ManagedConsentOutcome::kInstalledInactive, next(),
                        challenge.challenge_digest(), challenge.capability_id()),
                   ManagedQueryServiceError, "next challenge");
  // Reauthentication must name the same challenge; every prompt keeps capability and kind.
  CTX_EXPECT_THROW(make(ManagedConsentOutcome::kReauthenticationRequired, next(), digest("other"),
                        challenge.capability_id()),
                   ManagedQueryServiceError, "next challenge");
  CTX_EXPECT_THROW(make(ManagedConsentOutcome::kConsentRequired, next(),
                        challenge.challenge_digest(), "skill:other"),
                   ManagedQueryServiceError, "next challenge");
  CTX_EXPECT_THROW(make(ManagedConsentOutcome::kDenied, std::nullopt, "not-a-digest",
                        challenge.capability_id()),
                   ManagedQueryServiceError, "digests");
  CTX_EXPECT_THROW(ManagedConsentResolutionResult::create(
                       challenge.challenge_digest(), challenge.capability_id(),
                       engine::CapabilityKind::kSkill,
                       ManagedConsentOutcome::kDenied, "not a token", std::nullopt, {}, 4, record),
                   ManagedQueryServiceError, "token");
  CTX_EXPECT_THROW(ManagedConsentResolutionResult::create(
                       challenge.challenge_digest(), challenge.capability_id(),
                       engine::CapabilityKind::kSkill,
                       ManagedConsentOutcome::kDenied, "human-denied-install", std::nullopt, {},
                       0, record),
                   ManagedQueryServiceError, "journal head");
}

TEST(ManagedConsentResult, outcome_names_are_the_spec_vocabulary) {
  const std::vector<std::pair<ManagedConsentOutcome, std::string>> names = {
      {ManagedConsentOutcome::kConsentRequired, "consent-required"},
      {ManagedConsentOutcome::kReauthenticationRequired, "reauthentication-required"},
      {ManagedConsentOutcome::kDenied, "denied"},
      {ManagedConsentOutcome::kInstalledInactive, "installed-inactive"},
      {ManagedConsentOutcome::kInstallFailed, "install-failed"},
      {ManagedConsentOutcome::kInstallIndeterminate, "install-indeterminate"},
      {ManagedConsentOutcome::kExpired, "expired"},
      {ManagedConsentOutcome::kQuarantined, "quarantined"},
      {ManagedConsentOutcome::kSuperseded, "superseded"}};
  for (const auto& [outcome, name] : names) {
    EXPECT_EQ(printed(outcome), name);
    EXPECT_EQ(core::to_string(outcome), name);
    EXPECT_EQ(core::parse_enum<ManagedConsentOutcome>(name), outcome);
  }
  EXPECT_EQ(std::size(kManagedConsentOutcomeStrings.values), names.size());
  CTX_EXPECT_THROW(core::parse_enum<ManagedConsentOutcome>("installed"), core::JsonFieldError,
                   "unknown consent resolution outcome");
}

TEST(ManagedDesiredSetResult, status_names_are_the_spec_vocabulary) {
  const std::vector<std::pair<ManagedDesiredStatus, std::string>> names = {
      {ManagedDesiredStatus::kReconciled, "reconciled"},
      {ManagedDesiredStatus::kConsentRequired, "consent-required"},
      {ManagedDesiredStatus::kEffectPending, "effect-pending"},
      {ManagedDesiredStatus::kManualDeferred, "manual-deferred"},
      {ManagedDesiredStatus::kLifecycleDeferred, "lifecycle-deferred"}};
  for (const auto& [status, name] : names) {
    EXPECT_EQ(to_string(status), name);
    EXPECT_EQ(core::parse_enum<ManagedDesiredStatus>(name), status);
  }
  EXPECT_EQ(std::size(kManagedDesiredStatusStrings.values), names.size());
  CTX_EXPECT_THROW(core::parse_enum<ManagedDesiredStatus>("pending"), core::JsonFieldError,
                   "unknown desired set status");
}

}  // namespace
}  // namespace ctx::runtime
