// ConsentBroker on a real SQLite file, verifying real Ed25519 (openssl) and SSHSIG (ssh-keygen)
// signatures through the verifier .so files loaded by the host's PluginLoader. Every refusal is
// checked for its exact error type and for the store file staying byte-identical.
#include "host/runtime/consent/consent_broker.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <thread>

#include "host/app/installation.hpp"
#include "tests/host/runtime/consent/consent_fixture.hpp"
#include "tests/support/consent/faulty_consent_store.hpp"
#include "tests/support/consent/mem_consent_store.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::runtime {
namespace {

using testing::altered;
using testing::claims_for;
using testing::kAudience;
using testing::kAuthenticator;
using testing::kPrincipal;
using testing::make_challenge;
using testing::read_file;
using testing::signed_payload;
using testing::throws_exactly;

const std::string kKey = core::sha256_hex("managed-service-store-key").substr(0, 32);

// Counts lookups, then delegates.
class CountingDirectory final : public VerifierDirectory {
 public:
  explicit CountingDirectory(VerifierDirectory& inner) : inner_(inner) {}
  std::shared_ptr<const PinnedVerifier> resolve(const VerifierKey& key) override {
    ++calls;
    return inner_.resolve(key);
  }
  std::atomic<int> calls{0};

 private:
  VerifierDirectory& inner_;
};

class FixedEvidence final : public DecisionEvidencePort {
 public:
  explicit FixedEvidence(EvidenceAnswer answer) : answer_(std::move(answer)) {}
  EvidenceAnswer evidence(const ConsentRecord&) override {
    ++calls;
    return answer_;
  }
  int calls = 0;

 private:
  EvidenceAnswer answer_;
};

class ConsentBrokerTest : public ::testing::Test {
 protected:
  ConsentBrokerTest() {
    testing::load_verifier(plugins_, loader_, CTX_CONSENT_ED25519_SO);
    testing::load_verifier(plugins_, loader_, CTX_CONSENT_SSHSIG_SO);
    std::filesystem::create_directory(private_dir());
    ::chmod(private_dir().c_str(), 0700);
    registry_ = std::make_unique<TrustedVerifierRegistry>(private_dir(), plugins_);
    registry_->add({kAudience, kAuthenticator, kPrincipal}, "ed25519",
                   core::Json{{"public_key_pem", signers_.ed25519_key("human")}});
    signers_.ed25519_key("stranger");
    broker_ = open_broker();
  }

  std::filesystem::path private_dir() const { return state_.path() / "private"; }
  std::filesystem::path db_path() const { return private_dir() / "consent.sqlite3"; }
  std::unique_ptr<ConsentBroker> open_broker() {
    return std::make_unique<ConsentBroker>(db_path(), kKey, kAudience, clock_);
  }
  std::string sign(const SignedAssertionClaims& claims, const std::string& key = "human") {
    return signed_payload(claims,
                          [&](const std::string& b) { return signers_.ed25519_sign(key, b); });
  }
  std::string store_bytes() const { return read_file(db_path()); }
  void raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK);
  }
  ConsentReservation reservation_for(const ConsentChallenge& c, engine::Decision decision) {
    const ConsentChallengeFields& f = c.fields();
    return {"ctx-interactive-install:" + testing::digest_of("event"),
            testing::digest_of("event-content"),
            f.challenge_id,
            decision,
            f.policy_snapshot_digest,
            f.requested_action_id,
            f.requested_action_kind,
            f.requested_action_content_digest,
            f.requested_action_precondition_revision,
            f.expires_at};
  }

  testing::TempDir state_;
  testing::TempDir keys_;
  plugins::PluginLoader loader_{state_.path() / "loader-state"};
  ::ctx::app::LoadedPlugins plugins_;
  testing::Signers signers_{keys_.path()};
  testing::ManualClock clock_{"2026-08-03T12:00:30Z"};
  std::unique_ptr<TrustedVerifierRegistry> registry_;
  std::unique_ptr<ConsentBroker> broker_;
  const ConsentChallenge challenge_ = make_challenge();
};

TEST_F(ConsentBrokerTest, PublishesOnePendingChallengeIdempotently) {
  const ConsentRecord first = broker_->prepare(challenge_);
  EXPECT_EQ(first.state, ConsentState::kPending);
  EXPECT_EQ(first.created_at, "2026-08-03T12:00:30Z");
  const std::string bytes = store_bytes();
  EXPECT_EQ(broker_->prepare(challenge_).challenge, challenge_);
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  // Exactly one current challenge per pending consent: the same consent id with other
  // content is refused, as is a challenge for another audience.
  auto changed = testing::challenge_fields();
  changed.expires_at = "2026-08-03T12:59:00Z";
  EXPECT_TRUE(throws_exactly<ConsentBrokerConflict>(
      [&] { (void)broker_->prepare(ConsentChallenge::create(changed)); }));
  auto other_audience = testing::challenge_fields("consent-2");
  other_audience.audience = "another-audience";
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { (void)broker_->prepare(ConsentChallenge::create(other_audience)); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  EXPECT_EQ(broker_->status_by_challenge_digest(challenge_.digest()).challenge, challenge_);
  EXPECT_EQ(ConsentChallenge::from_json_text(challenge_.json_text()), challenge_);
  EXPECT_TRUE(throws_exactly<ConsentBrokerChallengeNotFound>(
      [&] { (void)broker_->status("consent-unknown"); }));
  struct stat st {};
  ASSERT_EQ(::stat(db_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(ConsentBrokerTest, SignedGrantBecomesDecisionReadyThenReservedThenSettled) {
  broker_->prepare(challenge_);
  const VerifiedHumanDecision decision =
      broker_->authenticate(challenge_, sign(claims_for(challenge_)), *registry_);
  EXPECT_EQ(decision.decision, engine::Decision::kGranted);
  EXPECT_EQ(decision.challenge_digest, challenge_.digest());
  EXPECT_EQ(decision.nonce_digest, core::sha256_hex("nonce-1"));
  ConsentRecord record = broker_->status(challenge_.challenge_id());
  EXPECT_EQ(record.state, ConsentState::kDecisionReady);
  EXPECT_EQ(record.assertion_nonce_count, 1);
  EXPECT_EQ(record.principal_digest, kPrincipal);
  EXPECT_EQ(record.decision_recorded_at, "2026-08-03T12:00:30Z");

  EXPECT_TRUE(throws_exactly<ConsentBrokerBindingError>(
      [&] { (void)broker_->interactive_guard(decision, testing::digest_of("other binding")); }));
  {
    ConsentBroker::Guard guard =
        broker_->interactive_guard(decision, challenge_.fields().execution_binding_digest);
    guard.reserve(reservation_for(challenge_, engine::Decision::kGranted));
    EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kReserved);
    // Leaving without settle (the guarded commit raised) releases the reservation.
  }
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kDecisionReady);
  ConsentBroker::Guard guard =
      broker_->interactive_guard(decision, challenge_.fields().execution_binding_digest);
  EXPECT_TRUE(throws_exactly<ConsentBrokerBindingError>(
      [&] { guard.reserve(reservation_for(challenge_, engine::Decision::kDenied)); }));
  guard.reserve(reservation_for(challenge_, engine::Decision::kGranted));
  record = guard.settle();
  EXPECT_EQ(record.state, ConsentState::kSettled);
  EXPECT_EQ(record.reservation_event_content_digest, testing::digest_of("event-content"));
  // A decision sealed by another broker instance is not accepted by this one's guard.
  const auto other = open_broker();
  EXPECT_TRUE(throws_exactly<ConsentBrokerBindingError>([&] {
    (void)other->interactive_guard(decision, challenge_.fields().execution_binding_digest);
  }));
}

TEST_F(ConsentBrokerTest, OneAlteredSigningByteIsRejectedAndChangesNothing) {
  broker_->prepare(challenge_);
  const std::string bytes = store_bytes();
  const std::string forged = signed_payload(claims_for(challenge_), [&](const std::string& b) {
    return signers_.ed25519_sign("human", altered(b));
  });
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { (void)broker_->authenticate(challenge_, forged, *registry_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kPending);
}

TEST_F(ConsentBrokerTest, AnotherKeyIsRejectedAndChangesNothing) {
  broker_->prepare(challenge_);
  const std::string bytes = store_bytes();
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>([&] {
    (void)broker_->authenticate(challenge_, sign(claims_for(challenge_), "stranger"), *registry_);
  }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  // The nonce was not burned: the real human's assertion with the same nonce still works.
  EXPECT_EQ(broker_->authenticate(challenge_, sign(claims_for(challenge_)), *registry_).decision,
            engine::Decision::kGranted);
}

TEST_F(ConsentBrokerTest, WrongAudienceIsRefusedBeforeAnyLookup) {
  broker_->prepare(challenge_);
  const std::string bytes = store_bytes();
  CountingDirectory counting(*registry_);
  auto claims = claims_for(challenge_);
  claims.audience = "another-audience";
  claims.challenge_digest = testing::digest_of("a challenge this broker never published");
  const auto unknown = testing::challenge_fields("consent-never-published");
  // Neither the verifier registry nor the broker's rows are consulted: an unknown challenge
  // would otherwise be ChallengeNotFound.
  EXPECT_TRUE(throws_exactly<ConsentBrokerAudienceMismatch>([&] {
    (void)broker_->authenticate(ConsentChallenge::create(unknown), sign(claims), counting);
  }));
  EXPECT_EQ(counting.calls.load(), 0);
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  // The same assertion with the right audience does reach both lookups.
  claims.audience = kAudience;
  EXPECT_TRUE(throws_exactly<ConsentBrokerChallengeNotFound>([&] {
    (void)broker_->authenticate(ConsentChallenge::create(unknown), sign(claims), counting);
  }));
  EXPECT_EQ(counting.calls.load(), 1);
}

TEST_F(ConsentBrokerTest, UnknownPrincipalIsRefusedBeforeBrokerLookup) {
  broker_->prepare(challenge_);
  const std::string bytes = store_bytes();
  auto claims = claims_for(challenge_);
  claims.principal_digest = testing::digest_of("an unknown human");
  const auto unknown = testing::challenge_fields("consent-never-published");
  EXPECT_TRUE(throws_exactly<UnknownHumanDecisionVerifier>([&] {
    (void)broker_->authenticate(ConsentChallenge::create(unknown), sign(claims), *registry_);
  }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
}

TEST_F(ConsentBrokerTest, ReplayedNonceIsRefused) {
  broker_->prepare(challenge_);
  const ConsentChallenge second = make_challenge("consent-2");
  broker_->prepare(second);
  const std::string payload = sign(claims_for(challenge_));
  broker_->authenticate(challenge_, payload, *registry_);
  const std::string bytes = store_bytes();
  // The same payload again, and the same nonce on another challenge.
  EXPECT_TRUE(throws_exactly<ConsentBrokerReplay>(
      [&] { (void)broker_->authenticate(challenge_, payload, *registry_); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerReplay>(
      [&] { (void)broker_->authenticate(second, sign(claims_for(second)), *registry_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  EXPECT_EQ(broker_->status("consent-2").state, ConsentState::kPending);
  EXPECT_EQ(broker_->authenticate(second, sign(claims_for(second, "nonce-2")), *registry_)
                .nonce_digest,
            core::sha256_hex("nonce-2"));
}

TEST_F(ConsentBrokerTest, ExpiredChallengeIsRefusedAndOnlyTheExpiryIsRecorded) {
  broker_->prepare(challenge_);
  const std::string payload = sign(claims_for(challenge_));
  clock_.set("2026-08-03T13:00:00Z");
  EXPECT_TRUE(throws_exactly<ConsentBrokerExpired>(
      [&] { (void)broker_->authenticate(challenge_, payload, *registry_); }));
  const ConsentRecord record = broker_->status(challenge_.challenge_id());
  EXPECT_EQ(record.state, ConsentState::kExpired);
  EXPECT_EQ(record.expired_at, "2026-08-03T13:00:00Z");
  EXPECT_FALSE(record.decision.has_value());
  EXPECT_EQ(record.assertion_nonce_count, 0);
  const std::string bytes = store_bytes();
  // Trusted time never regresses below what was recorded... the expiry stands.
  clock_.set("2026-08-03T12:10:00Z");
  EXPECT_TRUE(throws_exactly<ConsentBrokerExpired>(
      [&] { (void)broker_->authenticate(challenge_, payload, *registry_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
}

TEST_F(ConsentBrokerTest, ExpiredOrFutureAssertionIsRefusedAndChangesNothing) {
  broker_->prepare(challenge_);
  const std::string bytes = store_bytes();
  clock_.set("2026-08-03T12:30:00Z");  // the assertion's own expiry; the challenge is live
  EXPECT_TRUE(throws_exactly<ConsentBrokerExpired>([&] {
    (void)broker_->authenticate(challenge_, sign(claims_for(challenge_)), *registry_);
  }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  clock_.set("2026-08-03T11:59:00Z");  // issued in the future
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>([&] {
    (void)broker_->authenticate(challenge_, sign(claims_for(challenge_)), *registry_);
  }));
  auto outliving = claims_for(challenge_);
  clock_.set("2026-08-03T12:00:30Z");
  outliving.expires_at = "2026-08-03T13:30:00Z";
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { (void)broker_->authenticate(challenge_, sign(outliving), *registry_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
}

TEST_F(ConsentBrokerTest, TamperedRowIsCorruptionAndNothingIsMutated) {
  broker_->prepare(challenge_);
  const std::string payload = sign(claims_for(challenge_));
  broker_.reset();
  raw_sql("UPDATE consent_challenges SET created_at = '2026-08-03T11:00:00Z'");
  broker_ = open_broker();
  const std::string bytes = store_bytes();
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>(
      [&] { (void)broker_->status(challenge_.challenge_id()); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>(
      [&] { (void)broker_->authenticate(challenge_, payload, *registry_); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>([&] { (void)broker_->prepare(challenge_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
}

// The broker that wrote (and then read) a row remembers it as authenticated; a change another
// connection makes to that row while the broker stays open is still corruption.
TEST_F(ConsentBrokerTest, ARowAlteredUnderAnOpenBrokerIsStillCorruption) {
  broker_->prepare(challenge_);
  ASSERT_NO_THROW((void)broker_->status(challenge_.challenge_id()));
  raw_sql("UPDATE consent_challenges SET created_at = '2026-08-03T11:00:00Z'");
  const std::string bytes = store_bytes();
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>(
      [&] { (void)broker_->status(challenge_.challenge_id()); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>([&] { (void)broker_->prepare(challenge_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
}

TEST_F(ConsentBrokerTest, TamperedStateOrDeletedNonceIsCorruption) {
  broker_->prepare(challenge_);
  broker_->authenticate(challenge_, sign(claims_for(challenge_)), *registry_);
  broker_.reset();
  raw_sql("DELETE FROM consent_assertion_nonces");
  broker_ = open_broker();
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>(
      [&] { (void)broker_->status(challenge_.challenge_id()); }));
  broker_.reset();
  raw_sql("UPDATE consent_broker_identity SET trusted_time_high_water = '2030-01-01T00:00:00Z'");
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>([&] { (void)open_broker(); }));
  const std::string other_key(32, 'k');
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>(
      [&] { ConsentBroker wrong(db_path(), other_key, kAudience, clock_); }));
}

// A stored state column outside kConsentStateStrings is corruption, and nothing is written.
TEST_F(ConsentBrokerTest, UnknownStoredStateSpellingIsCorruption) {
  broker_->prepare(challenge_);
  broker_.reset();
  raw_sql("UPDATE consent_challenges SET state = 'Pending'");
  broker_ = open_broker();
  const std::string bytes = store_bytes();
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>(
      [&] { (void)broker_->status(challenge_.challenge_id()); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerCorruption>([&] { (void)broker_->prepare(challenge_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
}

// The persisted and reported spellings, each from its one table: frozen, distinct, parsed back.
TEST(ConsentBrokerSpellings, EachEnumRoundTripsThroughItsOneTable) {
  const std::pair<ConsentState, std::string_view> states[] = {
      {ConsentState::kPending, "pending"},
      {ConsentState::kDecisionReady, "decision-ready"},
      {ConsentState::kReserved, "reserved"},
      {ConsentState::kSettled, "settled"},
      {ConsentState::kExpired, "expired"},
      {ConsentState::kReauthRequired, "reauthentication-required"}};
  for (const auto& [state, text] : states) {
    EXPECT_EQ(core::to_string(state), text);
    EXPECT_EQ(core::parse_enum<ConsentState>(text), state);
  }
  const std::pair<JournalEvidence, std::string_view> evidence[] = {
      {JournalEvidence::kAbsentAtExpectedHead, "absent-at-expected-head"},
      {JournalEvidence::kCommitted, "committed"},
      {JournalEvidence::kHeadAdvanced, "head-advanced"},
      {JournalEvidence::kEventCollision, "event-collision"},
      {JournalEvidence::kCorrupt, "corrupt"},
      {JournalEvidence::kUnavailable, "unavailable"}};
  for (const auto& [value, text] : evidence) {
    EXPECT_EQ(core::to_string(value), text);
    EXPECT_EQ(core::parse_enum<JournalEvidence>(text), value);
  }
  const std::pair<ReconcileOutcome, std::string_view> outcomes[] = {
      {ReconcileOutcome::kSettled, "settled"},
      {ReconcileOutcome::kReauthRequired, "reauthentication-required"},
      {ReconcileOutcome::kExpired, "expired"},
      {ReconcileOutcome::kQuarantined, "quarantined"}};
  for (const auto& [value, text] : outcomes) {
    EXPECT_EQ(core::to_string(value), text);
    EXPECT_EQ(core::parse_enum<ReconcileOutcome>(text), value);
  }
  EXPECT_EQ(std::size(kConsentStateStrings.values), std::size(states));
  EXPECT_EQ(std::size(kJournalEvidenceStrings.values), std::size(evidence));
  EXPECT_EQ(std::size(kReconcileOutcomeStrings.values), std::size(outcomes));
  EXPECT_EQ(core::find_enum<ConsentState>("Pending"), std::nullopt);
  CTX_EXPECT_THROW(core::parse_enum<ConsentState>("no-such-state"), core::JsonFieldError,
                   "unknown consent state");
}

TEST_F(ConsentBrokerTest, ChangedTargetDigestIsRefusedWithoutBurningTheAssertion) {
  broker_->prepare(challenge_);
  const std::string bytes = store_bytes();
  const std::string payload = sign(claims_for(challenge_));
  auto moved = testing::challenge_fields();
  moved.execution_binding_digest = execution_binding_digest(
      "ctx-skill-installer-v1", testing::digest_of("installer-plugin"),
      testing::digest_of("host"), testing::digest_of("replaced target root"));
  EXPECT_TRUE(throws_exactly<ConsentBrokerBindingError>([&] {
    (void)broker_->authenticate(ConsentChallenge::create(moved), payload, *registry_);
  }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  // Back on the published target, the very same bytes are accepted.
  EXPECT_EQ(broker_->authenticate(challenge_, payload, *registry_).decision,
            engine::Decision::kGranted);
}

TEST_F(ConsentBrokerTest, TwoThreadsResolvingTheSameChallengeMakeExactlyOneDecision) {
  broker_->prepare(challenge_);
  const auto peer = open_broker();  // its own connection, as another service would have
  const std::string first = sign(claims_for(challenge_, "nonce-a"));
  const std::string second = sign(claims_for(challenge_, "nonce-b"));
  for (int round = 0; round < 2; ++round) {
    std::barrier start(2);
    std::atomic<int> accepted{0};
    std::atomic<int> replayed{0};
    const auto run = [&](ConsentBroker& broker, const std::string& payload) {
      start.arrive_and_wait();
      try {
        broker.authenticate(challenge_, payload, *registry_);
        ++accepted;
      } catch (const ConsentBrokerReplay&) {
        ++replayed;
      }
    };
    const std::string& payload_b = round == 0 ? first : second;
    std::thread a([&] { run(*broker_, first); });
    std::thread b([&] { run(*peer, payload_b); });
    a.join();
    b.join();
    EXPECT_EQ(accepted.load(), round == 0 ? 1 : 0);
    EXPECT_EQ(replayed.load(), round == 0 ? 1 : 2);
    const ConsentRecord record = broker_->status(challenge_.challenge_id());
    EXPECT_EQ(record.state, ConsentState::kDecisionReady);
    EXPECT_EQ(record.assertion_nonce_count, 1);
  }
}

TEST_F(ConsentBrokerTest, ReconcileAbsenceRequiresReauthenticationWithAFreshNonce) {
  broker_->prepare(challenge_);
  FixedEvidence absent({JournalEvidence::kAbsentAtExpectedHead, "", ""});
  EXPECT_TRUE(throws_exactly<ConsentBrokerConflict>(
      [&] { (void)broker_->reconcile(challenge_.challenge_id(), absent); }));
  const std::string payload = sign(claims_for(challenge_));
  broker_->authenticate(challenge_, payload, *registry_);
  ConsentReconciliation report = broker_->reconcile(challenge_.challenge_id(), absent);
  EXPECT_EQ(report.outcome, ReconcileOutcome::kReauthRequired);
  EXPECT_EQ(report.record.state, ConsentState::kReauthRequired);
  EXPECT_TRUE(throws_exactly<ConsentBrokerReplay>(
      [&] { (void)broker_->authenticate(challenge_, payload, *registry_); }));
  auto denied = claims_for(challenge_, "nonce-2");
  denied.decision = engine::Decision::kDenied;
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { (void)broker_->authenticate(challenge_, sign(denied), *registry_); }));
  // Another process authenticates a fresh nonce, reserves, and dies (no destructors run)
  // before settling: the row stays reserved and its lease lock is released by the kernel.
  const std::string fresh = sign(claims_for(challenge_, "nonce-2"));
  const ConsentReservation reservation = reservation_for(challenge_, engine::Decision::kGranted);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 1;
    try {
      ConsentBroker process_broker(db_path(), kKey, kAudience, clock_);
      const VerifiedHumanDecision decision =
          process_broker.authenticate(challenge_, fresh, *registry_);
      ConsentBroker::Guard guard =
          process_broker.interactive_guard(decision, challenge_.fields().execution_binding_digest);
      guard.reserve(reservation);
      ::_exit(0);  // the crash: no destructor, no settle, no release runs
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kReserved);
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).assertion_nonce_count, 2);
  // The journal evidence decides what the reserved row becomes.
  FixedEvidence other_event({JournalEvidence::kCommitted, "ctx-interactive-install:other",
                             testing::digest_of("other")});
  const std::string before = store_bytes();
  EXPECT_EQ(broker_->reconcile(challenge_.challenge_id(), other_event).outcome,
            ReconcileOutcome::kQuarantined);
  FixedEvidence advanced({JournalEvidence::kHeadAdvanced, "", ""});
  EXPECT_EQ(broker_->reconcile(challenge_.challenge_id(), advanced).journal_status,
            JournalEvidence::kHeadAdvanced);
  EXPECT_TRUE(store_bytes() == before) << "the store file changed";
  FixedEvidence committed({JournalEvidence::kCommitted,
                           "ctx-interactive-install:" + testing::digest_of("event"),
                           testing::digest_of("event-content")});
  report = broker_->reconcile(challenge_.challenge_id(), committed);
  EXPECT_EQ(report.outcome, ReconcileOutcome::kSettled);
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kSettled);
  EXPECT_EQ(broker_->reconcile(challenge_.challenge_id(), absent).outcome,
            ReconcileOutcome::kQuarantined);
}

TEST_F(ConsentBrokerTest, SshsigAssertionsFromSshKeygenVerifyThroughTheRegistry) {
  const std::string line = signers_.ssh_key("ssh-human");
  signers_.ssh_key("ssh-stranger");
  registry_->add({kAudience, "ssh-authenticator", kPrincipal}, "sshsig",
                 core::Json{{"public_key", line}});
  broker_->prepare(challenge_);
  auto claims = claims_for(challenge_);
  claims.authenticator_id = "ssh-authenticator";
  const std::string bytes = store_bytes();
  const auto ssh = [&](const std::string& key, bool alter) {
    return signed_payload(claims, [&](const std::string& b) {
      return signers_.ssh_sign(key, alter ? altered(b) : b);
    });
  };
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { (void)broker_->authenticate(challenge_, ssh("ssh-human", true), *registry_); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { (void)broker_->authenticate(challenge_, ssh("ssh-stranger", false), *registry_); }));
  EXPECT_TRUE(store_bytes() == bytes) << "the store file changed";
  EXPECT_EQ(broker_->authenticate(challenge_, ssh("ssh-human", false), *registry_).decision,
            engine::Decision::kGranted);
}

// A full store retires, in the transaction that publishes the next challenge, the challenges
// past their expiry that are settled or expired undecided, with their nonce rows; a reserved one
// or one that expired holding a decision (the journal may still settle it) stays. A retired
// challenge can never be published or decided again, even when the clock goes back.
TEST_F(ConsentBrokerTest, AFullStoreRetiresExpiredSettledAndUndecidedChallengesOnly) {
  broker_ = std::make_unique<ConsentBroker>(db_path(), kKey, kAudience, clock_,
                                            ConsentBroker::Options{.capacity = 4});
  const auto expiring = [](const std::string& id) {
    auto fields = testing::challenge_fields(id);
    fields.expires_at = "2026-08-03T12:10:00Z";
    return ConsentChallenge::create(fields);
  };
  const auto decided = [&](const ConsentChallenge& c, const std::string& nonce) {
    auto claims = claims_for(c, nonce);
    claims.expires_at = "2026-08-03T12:09:00Z";
    return sign(claims);
  };
  const auto rows = [&](const std::string& table) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db_path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &statement,
                                 nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_step(statement), SQLITE_ROW);
    const int n = sqlite3_column_int(statement, 0);
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return n;
  };
  const ConsentChallenge undecided = expiring("consent-a");
  const ConsentChallenge settled = expiring("consent-b");
  const ConsentChallenge ready = expiring("consent-c");
  const ConsentChallenge reserved = expiring("consent-d");
  const ConsentChallenge next = make_challenge("consent-e");
  for (const auto* c : {&undecided, &settled, &ready, &reserved}) broker_->prepare(*c);
  const std::string settled_payload = decided(settled, "nonce-b");
  {
    const VerifiedHumanDecision decision =
        broker_->authenticate(settled, settled_payload, *registry_);
    ConsentBroker::Guard guard =
        broker_->interactive_guard(decision, settled.fields().execution_binding_digest);
    guard.reserve(reservation_for(settled, engine::Decision::kGranted));
    ASSERT_EQ(guard.settle().state, ConsentState::kSettled);
  }
  broker_->authenticate(ready, decided(ready, "nonce-c"), *registry_);
  // Another process reserves "consent-d" and dies before settling: the row stays reserved.
  const std::string reserved_payload = decided(reserved, "nonce-d");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ConsentBroker process_broker(db_path(), kKey, kAudience, clock_);
      const VerifiedHumanDecision decision =
          process_broker.authenticate(reserved, reserved_payload, *registry_);
      ConsentBroker::Guard guard =
          process_broker.interactive_guard(decision, reserved.fields().execution_binding_digest);
      guard.reserve(reservation_for(reserved, engine::Decision::kGranted));
      ::_exit(0);  // the crash: no settle, no release
    } catch (...) {
    }
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(broker_->status("consent-d").state, ConsentState::kReserved);
  ASSERT_EQ(rows("consent_assertion_nonces"), 3);

  // Full, and nothing has expired yet: refused, and nothing is written.
  clock_.set("2026-08-03T12:05:00Z");
  const std::string full = store_bytes();
  EXPECT_TRUE(throws_exactly<ConsentBrokerCapacityExceeded>([&] { (void)broker_->prepare(next); }));
  EXPECT_TRUE(store_bytes() == full) << "the store file changed";

  clock_.set("2026-08-03T12:20:00Z");
  EXPECT_EQ(broker_->prepare(next).state, ConsentState::kPending);
  EXPECT_EQ(rows("consent_challenges"), 3);
  EXPECT_EQ(rows("consent_assertion_nonces"), 2) << "a retired challenge's nonce row goes with it";
  for (const char* id : {"consent-a", "consent-b"}) {
    EXPECT_TRUE(throws_exactly<ConsentBrokerChallengeNotFound>([&] { (void)broker_->status(id); }))
        << id;
  }
  EXPECT_EQ(broker_->status("consent-c").state, ConsentState::kExpired);
  EXPECT_TRUE(broker_->status("consent-c").decision.has_value());
  EXPECT_EQ(broker_->status("consent-d").state, ConsentState::kReserved);
  EXPECT_EQ(broker_->status("consent-e").state, ConsentState::kPending);

  // Trusted time was raised to the retirement: with the clock back before their expiry, the
  // retired challenges are still past it, and a replayed decision finds nothing to decide.
  clock_.set("2026-08-03T12:05:00Z");
  broker_ = open_broker();
  const std::string after = store_bytes();
  EXPECT_TRUE(throws_exactly<ConsentBrokerExpired>([&] { (void)broker_->prepare(undecided); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerExpired>([&] { (void)broker_->prepare(settled); }));
  EXPECT_TRUE(throws_exactly<ConsentBrokerChallengeNotFound>(
      [&] { (void)broker_->authenticate(settled, settled_payload, *registry_); }));
  EXPECT_TRUE(store_bytes() == after) << "the store file changed";
}

TEST_F(ConsentBrokerTest, DecisionPastItsExpiryNeedsReauthentication) {
  broker_->prepare(challenge_);
  auto claims = claims_for(challenge_);
  claims.expires_at = "2026-08-03T12:05:00Z";
  broker_->authenticate(challenge_, sign(claims), *registry_);
  clock_.set("2026-08-03T12:06:00Z");
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kReauthRequired);
  clock_.set("2026-08-03T13:00:01Z");
  EXPECT_EQ(broker_->status(challenge_.challenge_id()).state, ConsentState::kExpired);
}

// The broker's state machine over the store port alone: the in-memory store carries a grant
// from publication to settlement, refuses a replayed nonce, and keeps the audience it was made
// for.
TEST_F(ConsentBrokerTest, TheStateMachineRunsOverTheInMemoryStore) {
  auto store = std::make_shared<testing::MemConsentStore>(private_dir() / "consent.mem");
  ConsentBroker broker(store, kAudience, clock_, ConsentBroker::Options{});
  EXPECT_EQ(broker.path(), private_dir() / "consent.mem");
  EXPECT_EQ(broker.prepare(challenge_).state, ConsentState::kPending);
  const std::string payload = sign(claims_for(challenge_));
  const VerifiedHumanDecision decision = broker.authenticate(challenge_, payload, *registry_);
  EXPECT_TRUE(throws_exactly<ConsentBrokerReplay>(
      [&] { (void)broker.authenticate(challenge_, payload, *registry_); }));
  ConsentBroker::Guard guard =
      broker.interactive_guard(decision, challenge_.fields().execution_binding_digest);
  guard.reserve(reservation_for(challenge_, engine::Decision::kGranted));
  EXPECT_EQ(broker.status(challenge_.challenge_id()).state, ConsentState::kReserved);
  EXPECT_EQ(guard.settle().state, ConsentState::kSettled);
  EXPECT_EQ(store->begin()->nonces_of(challenge_.challenge_id()).size(), 1U);
  EXPECT_TRUE(throws_exactly<ConsentBrokerDecisionRejected>(
      [&] { ConsentBroker other(store, "another-audience", clock_, ConsentBroker::Options{}); }));
}

// A settle write that fails in the store (the seeds' patched _settle) fails settle(), leaves the
// reservation unsettled, and reconciliation from the journal's evidence settles it.
TEST_F(ConsentBrokerTest, AFailedSettleWriteLeavesTheDecisionForReconciliation) {
  auto store = std::make_shared<testing::FaultyConsentStore>(
      std::make_shared<testing::MemConsentStore>(private_dir() / "consent.mem"));
  ConsentBroker broker(store, kAudience, clock_, ConsentBroker::Options{});
  broker.prepare(challenge_);
  const VerifiedHumanDecision decision =
      broker.authenticate(challenge_, sign(claims_for(challenge_)), *registry_);
  {
    ConsentBroker::Guard guard =
        broker.interactive_guard(decision, challenge_.fields().execution_binding_digest);
    guard.reserve(reservation_for(challenge_, engine::Decision::kGranted));
    store->fail_next(
        testing::FaultyConsentStore::Op::kUpdateChallenge,
        [] { throw std::runtime_error("simulated settle failure"); },
        testing::FaultyConsentStore::to_state(ConsentState::kSettled));
    CTX_EXPECT_THROW((void)guard.settle(), std::runtime_error, "simulated settle failure");
    EXPECT_EQ(store->faults_fired(), 1);
    EXPECT_EQ(broker.status(challenge_.challenge_id()).state, ConsentState::kReserved);
  }
  // The unsettled guard released its reservation; the journal says the decision committed.
  EXPECT_EQ(broker.status(challenge_.challenge_id()).state, ConsentState::kDecisionReady);
  FixedEvidence committed({JournalEvidence::kCommitted,
                           "ctx-interactive-install:" + testing::digest_of("event"),
                           testing::digest_of("event-content")});
  EXPECT_EQ(broker.reconcile(challenge_.challenge_id(), committed).outcome,
            ReconcileOutcome::kSettled);
  EXPECT_EQ(broker.status(challenge_.challenge_id()).state, ConsentState::kSettled);
}

}  // namespace
}  // namespace ctx::runtime
