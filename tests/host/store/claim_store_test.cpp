// One-use authority in SqliteJournalStore (spec §6.4–6.5): claim → outcome → settlement for
// install and activation actions, their refusals, status, tamper detection, and recovery after
// a process is killed (SIGKILL) between durable steps.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "host/store/sqlite_journal_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/journal_fixtures.hpp"
#include "tests/support/journal/raw_sqlite.hpp"

namespace ctx::testing::journal {
namespace {

using engine::ActionClaim;
using engine::ExecutionAuthority;
using engine::GuardMode;
using engine::InstallOutcome;
using store::SqliteJournalStore;

const std::string kMaterial = digest_of("result-material");
const std::string kBinding = digest_of("execution-binding");
const std::string kBindingJson =
    "{\"binding_digest\":\"" + kBinding + "\",\"driver_id\":\"skill-installer\"}";

Json install_action(engine::Revision precondition, const std::string& id = "action-install-1",
                    const std::string& expires = "2026-08-02T13:00:00Z") {
  return Json{{"action_id", id},
              {"kind", "InstallCapability"},
              {"precondition_revision", precondition},
              {"expires_at", expires},
              {"scope", scope_of(stream())},
              {"payload", Json{{"installer_digest", digest_of("installer")},
                               {"result_material", Json{{"identity_digest", kMaterial}}}}}};
}

Json activation_action(engine::Revision precondition, const std::string& id = "action-activate-1",
                       const std::string& expires = "2026-08-02T14:00:00Z") {
  return Json{{"action_id", id},
              {"kind", "ActivateCapability"},
              {"precondition_revision", precondition},
              {"expires_at", expires},
              {"scope", scope_of(stream())},
              {"payload", Json{{"material_identity", Json{{"identity_digest", kMaterial}}}}}};
}

class ClaimStoreTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "journal.sqlite3"; }
  SqliteJournalStore& s() {
    if (!store_) store_ = std::make_unique<SqliteJournalStore>(path(), clock_);
    return *store_;
  }
  void reopen() {
    store_.reset();
    s();
  }

  engine::JournalRecord append(const std::string& event_id, const std::string& kind,
                               std::vector<Json> actions = {}, Json payload = Json::object(),
                               std::optional<engine::SettlementGuard> guard = std::nullopt,
                               const std::string& occurred_at = "2026-08-02T12:00:00Z") {
    AppendSpec spec;
    spec.expected = s().head(stream()).revision;
    spec.event_id = event_id;
    spec.kind = kind;
    spec.payload = std::move(payload);
    spec.actions = std::move(actions);
    spec.occurred_at = occurred_at;
    spec.state_tag = event_id;
    engine::JournalAppend request = make_append(spec);
    request.guard = std::move(guard);
    return s().append(request).record;
  }

  // r1 SessionStarted, r2 emits the install action.
  void journal_install_action() {
    append("event-session", "SessionStarted");
    append("event-decision", "UserDecision", {install_action(2)});
  }

  engine::ClaimRequest claim_request(const Json& action) {
    engine::JournalHead head = s().head(stream());
    return engine::ClaimRequest{
        .stream = stream(),
        .expected_revision = head.revision,
        .expected_head_record_digest = *head.record_digest,
        .action_json = core::canonical_json(action),
        .authorization_digest = digest_of("authorization"),
        .execution_binding_json = kBindingJson,
        .execution_binding_digest = kBinding,
        .installed_by_action_content_digest = std::nullopt,
    };
  }

  engine::InstallOutcomeRequest install_outcome(const Json& action, InstallOutcome outcome) {
    return engine::InstallOutcomeRequest{
        .stream = stream(),
        .action_json = core::canonical_json(action),
        .execution_binding_digest = kBinding,
        .outcome = outcome,
        .observed_material_identity_digest =
            outcome == InstallOutcome::kApplied ? std::optional<std::string>(kMaterial)
                                                : std::nullopt,
        .verification_digest = digest_of("verification"),
        .expected_result_material_identity_digest = kMaterial,
    };
  }

  Json receipt_payload(const Json& action) {
    return Json{{"action_id", action["action_id"]},
                {"action_kind", action["kind"]},
                {"action_content_digest", core::sha256_hex(core::canonical_json(action))},
                {"action_precondition_revision", action["precondition_revision"]}};
  }

  TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<SqliteJournalStore> store_;
};

TEST_F(ClaimStoreTest, InstallLifecycleClaimOutcomeSettlement) {
  journal_install_action();
  Json action = install_action(2);
  EXPECT_EQ(s().install_execution_status(stream(), "action-install-1"),
            engine::InstallExecutionStatus{});

  clock_.advance_seconds(10);
  ActionClaim claim = s().claim_install(claim_request(action));
  EXPECT_EQ(claim.claim_digest, engine::install_claim_digest(claim));
  EXPECT_EQ(claim.claimed_at, "2026-08-02T12:00:10Z");
  EXPECT_EQ(claim.claimed_head_revision, 2);
  EXPECT_EQ(claim.precondition_revision, 2);
  EXPECT_EQ(claim.action_content_digest, core::sha256_hex(core::canonical_json(action)));
  auto status = s().install_execution_status(stream(), "action-install-1");
  EXPECT_TRUE(status.claimed);
  EXPECT_FALSE(status.outcome_recorded);
  EXPECT_FALSE(status.settled);
  EXPECT_EQ(status.execution_binding_digest, kBinding);
  EXPECT_EQ(s().find_install_claim(stream(), "action-install-1"), claim);

  clock_.advance_seconds(5);
  engine::ExecutionOutcome outcome =
      s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied));
  EXPECT_EQ(outcome.outcome_digest, engine::install_outcome_digest(outcome));
  EXPECT_EQ(outcome.claim_digest, claim.claim_digest);
  EXPECT_EQ(outcome.observed_at, "2026-08-02T12:00:15Z");
  // An identical retry returns the stored outcome unchanged (even later).
  clock_.advance_seconds(5);
  EXPECT_EQ(s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied)),
            outcome);
  status = s().install_execution_status(stream(), "action-install-1");
  EXPECT_TRUE(status.outcome_recorded);
  EXPECT_EQ(status.outcome, InstallOutcome::kApplied);
  EXPECT_EQ(status.outcome_digest, outcome.outcome_digest);
  EXPECT_EQ(status.observed_at, outcome.observed_at);
  EXPECT_FALSE(status.settled);

  engine::SettlementGuard guard = outcome.settlement_guard();
  EXPECT_EQ(guard.authority, ExecutionAuthority::kInstall);
  EXPECT_EQ(guard.mode, GuardMode::kApplied);
  engine::JournalRecord receipt =
      append("ctx-install-receipt-" + outcome.outcome_digest, "ActionApplied", {},
             receipt_payload(action), guard);
  EXPECT_EQ(receipt.revision, 3);
  status = s().install_execution_status(stream(), "action-install-1");
  EXPECT_TRUE(status.settled);
  EXPECT_EQ(raw_count(path(), "engine_install_claims"), 1);
  EXPECT_EQ(raw_count(path(), "engine_install_outcomes"), 1);
  EXPECT_EQ(raw_count(path(), "engine_install_claim_settlements"), 1);

  // Settled is terminal: the identical receipt replays (no new rows); another receipt, a new
  // outcome or a second claim are refused.
  AppendSpec retry;
  retry.expected = 2;
  retry.event_id = receipt.event_id;
  retry.kind = "ActionApplied";
  retry.payload = receipt_payload(action);
  retry.state_tag = receipt.event_id;
  engine::JournalAppend again = make_append(retry);
  again.guard = guard;
  EXPECT_TRUE(s().append(again).replayed);
  EXPECT_EQ(raw_count(path(), "engine_install_claim_settlements"), 1);
  CTX_EXPECT_THROW(append("receipt-2", "ActionApplied", {}, receipt_payload(action), guard),
                   engine::InstallActionClaimSettled, "already has a terminal settlement");
  CTX_EXPECT_THROW(s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied)),
                   engine::InstallActionClaimSettled, "terminal settlement");
  auto late = claim_request(action);
  CTX_EXPECT_THROW(s().claim_install(late), engine::InstallActionAlreadyClaimed,
                   "has already been claimed");
  EXPECT_EQ(s().head(stream()).revision, 3);
  reopen();  // every row re-validates against the journal on open
  EXPECT_TRUE(s().install_execution_status(stream(), "action-install-1").settled);
  s().verify();
}

TEST_F(ClaimStoreTest, SecondClaimOfTheSameActionIsAlreadyClaimed) {
  journal_install_action();
  Json action = install_action(2);
  s().claim_install(claim_request(action));
  SqliteJournalStore second(path(), clock_);
  try {
    second.claim_install(claim_request(action));
    FAIL() << "expected InstallActionAlreadyClaimed";
  } catch (const engine::InstallActionAlreadyClaimed& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAlreadyExists);
    EXPECT_NE(std::string(e.what()).find("has already been claimed"), std::string::npos);
  }
  EXPECT_EQ(raw_count(path(), "engine_install_claims"), 1);
}

TEST_F(ClaimStoreTest, ClaimRequiresTheExactJournalAuthorityAndCurrentHead) {
  journal_install_action();
  Json action = install_action(2);
  // Not emitted by the issuing record (other content under the same id).
  Json forged = install_action(2, "action-install-1", "2026-08-02T12:59:00Z");
  CTX_EXPECT_THROW(s().claim_install(claim_request(forged)), InvalidArgument,
                   "not exact journal authority");
  // Wrong kind for this claim kind.
  CTX_EXPECT_THROW(s().claim_activation(claim_request(action)), InvalidArgument,
                   "ActivateCapability");
  // Stale head.
  auto stale = claim_request(action);
  append("event-turn", "TurnStarting");
  CTX_EXPECT_THROW(s().claim_install(stale), engine::RevisionConflict,
                   "expected revision 2, found 3");
  // Same revision, other head digest.
  auto wrong_digest = claim_request(action);
  wrong_digest.expected_head_record_digest = digest_of("not-the-head");
  EXPECT_THROW(s().claim_install(wrong_digest), engine::RevisionConflict);
  // Malformed inputs.
  auto bad_binding = claim_request(action);
  bad_binding.execution_binding_json = "{ }";
  CTX_EXPECT_THROW(s().claim_install(bad_binding), InvalidArgument, "execution_binding_json");
  auto bad_json = claim_request(action);
  bad_json.action_json = core::canonical_json(action) + " ";
  CTX_EXPECT_THROW(s().claim_install(bad_json), InvalidArgument, "action_json");
  EXPECT_EQ(raw_count(path(), "engine_install_claims"), 0);
  // The exact action still claims at the current head.
  EXPECT_EQ(s().claim_install(claim_request(action)).claimed_head_revision, 3);
}

TEST_F(ClaimStoreTest, ExpiredActionCannotBeClaimedAndClockFailureIsReported) {
  journal_install_action();
  Json action = install_action(2);
  clock_.fail(true);
  CTX_EXPECT_THROW(s().claim_install(claim_request(action)), engine::EngineStoreError,
                   "trusted utc clock failed");
  clock_.fail(false);
  clock_.set("2026-08-02T13:00:00Z");
  CTX_EXPECT_THROW(s().claim_install(claim_request(action)), engine::InstallActionClaimExpired,
                   "expired before it was claimed");
  EXPECT_FALSE(s().install_execution_status(stream(), "action-install-1").claimed);
}

TEST_F(ClaimStoreTest, OutcomeRefusals) {
  journal_install_action();
  Json action = install_action(2);
  CTX_EXPECT_THROW(s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied)),
                   engine::InstallExecutionOutcomeRequired, "has no durable execution claim");
  s().claim_install(claim_request(action));
  auto other_binding = install_outcome(action, InstallOutcome::kApplied);
  other_binding.execution_binding_digest = digest_of("other-binding");
  EXPECT_THROW(s().record_install_outcome(other_binding), engine::InstallExecutionOutcomeConflict);
  auto wrong_material = install_outcome(action, InstallOutcome::kApplied);
  wrong_material.observed_material_identity_digest = digest_of("other-material");
  CTX_EXPECT_THROW(s().record_install_outcome(wrong_material),
                   engine::InstallExecutionOutcomeConflict,
                   "does not match authorized result material");
  auto failed_with_material = install_outcome(action, InstallOutcome::kFailed);
  failed_with_material.observed_material_identity_digest = kMaterial;
  CTX_EXPECT_THROW(s().record_install_outcome(failed_with_material), InvalidArgument,
                   "verified material absence");
  s().record_install_outcome(install_outcome(action, InstallOutcome::kFailed));
  CTX_EXPECT_THROW(s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied)),
                   engine::InstallExecutionOutcomeConflict, "already has a different outcome");
  EXPECT_EQ(raw_count(path(), "engine_install_outcomes"), 1);
  EXPECT_EQ(s().install_execution_status(stream(), "action-install-1").outcome,
            InstallOutcome::kFailed);
}

TEST_F(ClaimStoreTest, ReceiptGuardRefusalsLeaveTheJournalUnchanged) {
  journal_install_action();
  Json action = install_action(2);
  std::string content = core::sha256_hex(core::canonical_json(action));
  engine::SettlementGuard guard{ExecutionAuthority::kInstall, "action-install-1", content,
                                GuardMode::kApplied, digest_of("some-outcome")};
  CTX_EXPECT_THROW(append("receipt", "ActionApplied", {}, receipt_payload(action), guard),
                   engine::InstallActionClaimRequired, "must be claimed before receipt commit");
  s().claim_install(claim_request(action));
  CTX_EXPECT_THROW(append("receipt", "ActionApplied", {}, receipt_payload(action), guard),
                   engine::InstallExecutionOutcomeRequired, "has no verified execution outcome");
  auto outcome = s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied));
  CTX_EXPECT_THROW(append("receipt", "ActionApplied", {}, receipt_payload(action), guard),
                   engine::InstallExecutionOutcomeConflict, "does not match");
  // Mode must match the outcome and the receipt event must close this action.
  auto failed_guard = outcome.settlement_guard();
  failed_guard.mode = GuardMode::kFailed;
  EXPECT_THROW(append("receipt", "ActionFailed", {}, receipt_payload(action), failed_guard),
               engine::InstallExecutionOutcomeConflict);
  EXPECT_THROW(append("receipt", "ActionApplied", {}, Json{{"action_id", "other"}},
                      outcome.settlement_guard()),
               engine::InstallExecutionOutcomeConflict);
  // Expiry of a claimed action is refused.
  engine::SettlementGuard expire{ExecutionAuthority::kInstall, "action-install-1", content,
                                 GuardMode::kExpired, std::nullopt};
  CTX_EXPECT_THROW(append("expiry", "ActionExpired", {}, receipt_payload(action), expire),
                   engine::InstallActionAlreadyClaimed, "cannot expire as unclaimed");
  EXPECT_EQ(s().head(stream()).revision, 2);
  EXPECT_EQ(raw_count(path(), "engine_install_claim_settlements"), 0);
  // Malformed guards.
  auto no_digest = guard;
  no_digest.execution_outcome_digest.reset();
  CTX_EXPECT_THROW(append("receipt", "ActionApplied", {}, receipt_payload(action), no_digest),
                   InvalidArgument, "execution outcome digest");
}

TEST_F(ClaimStoreTest, UnclaimedActionExpiresWithoutSettlement) {
  journal_install_action();
  Json action = install_action(2);
  engine::SettlementGuard expire{ExecutionAuthority::kInstall, "action-install-1",
                                 core::sha256_hex(core::canonical_json(action)),
                                 GuardMode::kExpired, std::nullopt};
  EXPECT_EQ(append("expiry", "ActionExpired", {}, receipt_payload(action), expire).revision, 3);
  EXPECT_EQ(raw_count(path(), "engine_install_claim_settlements"), 0);
  EXPECT_FALSE(s().install_execution_status(stream(), "action-install-1").claimed);
}

TEST_F(ClaimStoreTest, FailedInstallSettlesAsFailed) {
  journal_install_action();
  Json action = install_action(2);
  s().claim_install(claim_request(action));
  auto outcome = s().record_install_outcome(install_outcome(action, InstallOutcome::kFailed));
  EXPECT_EQ(outcome.settlement_guard().mode, GuardMode::kFailed);
  append("receipt-failed", "ActionFailed", {}, receipt_payload(action), outcome.settlement_guard());
  auto status = s().install_execution_status(stream(), "action-install-1");
  EXPECT_TRUE(status.settled);
  EXPECT_EQ(status.outcome, InstallOutcome::kFailed);
}

// Install A (applied, settled at r3 which emits activation B), then activate B.
class ActivationTest : public ClaimStoreTest {
 protected:
  void SetUp() override {
    journal_install_action();
    Json install = install_action(2);
    clock_.advance_seconds(1);
    s().claim_install(claim_request(install));
    clock_.advance_seconds(1);
    install_outcome_ =
        s().record_install_outcome(install_outcome(install, InstallOutcome::kApplied));
    append("install-receipt", "ActionApplied", {activation_action(3)}, receipt_payload(install),
           install_outcome_->settlement_guard());
    install_digest_ = core::sha256_hex(core::canonical_json(install));
  }

  engine::ClaimRequest activation_request() {
    auto request = claim_request(activation_action(3));
    request.installed_by_action_content_digest = install_digest_;
    return request;
  }

  engine::ActivationOutcomeRequest activation_outcome() {
    return engine::ActivationOutcomeRequest{
        .stream = stream(),
        .action_json = core::canonical_json(activation_action(3)),
        .execution_binding_digest = kBinding,
        .observed_material_identity_digest = kMaterial,
        .verification_digest = digest_of("activation-verification"),
    };
  }

  std::optional<engine::ExecutionOutcome> install_outcome_;
  std::string install_digest_;
};

TEST_F(ActivationTest, LifecycleWithReceiptAtObservationTime) {
  clock_.advance_seconds(1);
  ActionClaim claim = s().claim_activation(activation_request());
  EXPECT_EQ(claim.claim_digest, engine::activation_claim_digest(claim));
  CTX_EXPECT_THROW(s().claim_activation(activation_request()),
                   engine::ActivationActionAlreadyClaimed, "is already claimed");
  clock_.advance_seconds(1);
  engine::ExecutionOutcome outcome = s().record_activation_outcome(activation_outcome());
  EXPECT_EQ(outcome.outcome, std::nullopt);
  EXPECT_EQ(outcome.outcome_digest, engine::activation_outcome_digest(outcome));
  auto status = s().activation_execution_status(stream(), "action-activate-1");
  EXPECT_TRUE(status.claimed);
  EXPECT_TRUE(status.outcome_recorded);
  EXPECT_FALSE(status.settled);
  EXPECT_EQ(status.outcome_digest, outcome.outcome_digest);
  EXPECT_EQ(status.observed_at, outcome.observed_at);

  engine::SettlementGuard guard = outcome.settlement_guard();
  EXPECT_EQ(guard.authority, ExecutionAuthority::kActivation);
  // The receipt must occur exactly at the outcome's observation time.
  EXPECT_THROW(append("activation-receipt", "ActionApplied", {},
                      receipt_payload(activation_action(3)), guard, "2026-08-02T12:00:00Z"),
               engine::ActivationExecutionOutcomeConflict);
  append("activation-receipt", "ActionApplied", {}, receipt_payload(activation_action(3)), guard,
         outcome.observed_at);
  EXPECT_TRUE(s().activation_execution_status(stream(), "action-activate-1").settled);
  CTX_EXPECT_THROW(append("activation-receipt-2", "ActionApplied", {},
                          receipt_payload(activation_action(3)), guard, outcome.observed_at),
                   engine::ActivationActionClaimSettled, "is already settled");
  EXPECT_EQ(raw_count(path(), "engine_activation_claim_settlements"), 1);
  // The activation settlement's outcome column is the outcome digest (no kind, no spelling).
  EXPECT_EQ(raw_text(path(), "SELECT outcome_digest FROM engine_activation_claim_settlements"),
            outcome.outcome_digest);
  reopen();
  s().verify();
}

TEST_F(ActivationTest, RefusalsSpecificToActivation) {
  CTX_EXPECT_THROW(s().record_activation_outcome(activation_outcome()),
                   engine::ActivationExecutionOutcomeRequired, "has no durable claim");
  // The trusted clock may not run backwards past the installation.
  clock_.set("2026-08-02T12:00:01Z");
  CTX_EXPECT_THROW(s().claim_activation(activation_request()), engine::EngineStoreError,
                   "trusted utc clock moved before installation");
  clock_.set("2026-08-02T12:00:05Z");
  auto unknown_install = activation_request();
  unknown_install.installed_by_action_content_digest = digest_of("unknown-install");
  CTX_EXPECT_THROW(s().claim_activation(unknown_install), InvalidArgument, "install claim");
  s().claim_activation(activation_request());
  engine::SettlementGuard failed{ExecutionAuthority::kActivation, "action-activate-1",
                                 digest_of("x"), GuardMode::kFailed, digest_of("y")};
  CTX_EXPECT_THROW(append("r", "ActionFailed", {}, receipt_payload(activation_action(3)), failed),
                   InvalidArgument, "no failed mode");
  clock_.set("2026-08-02T14:00:00Z");
  CTX_EXPECT_THROW(s().record_activation_outcome(activation_outcome()),
                   engine::ActivationActionClaimExpired, "expired before observation");
  EXPECT_FALSE(s().activation_execution_status(stream(), "action-activate-1").outcome_recorded);
}

TEST_F(ActivationTest, ExpiredActivationCannotBeClaimed) {
  clock_.set("2026-08-02T14:00:00Z");
  CTX_EXPECT_THROW(s().claim_activation(activation_request()),
                   engine::ActivationActionClaimExpired, "expired before claim");
}

TEST_F(ClaimStoreTest, TamperedClaimRowIsJournalCorruptionOnOpen) {
  journal_install_action();
  s().claim_install(claim_request(install_action(2)));
  store_.reset();
  raw_exec(path(), "UPDATE engine_install_claims SET claimed_at = '2026-08-02T12:00:01Z'");
  CTX_EXPECT_THROW(s(), engine::JournalCorruption, "claim_digest");
}

// The install authority's rows store the one table spellings ("InstallCapability", "applied"),
// and the claim and settlement digests cover exactly those spellings (recomputed here from
// hand-spelled objects, not through the store's code).
TEST_F(ClaimStoreTest, InstallRowsPersistTheOneTableSpellings) {
  journal_install_action();
  Json action = install_action(2);
  ActionClaim claim = s().claim_install(claim_request(action));
  auto outcome = s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied));
  engine::JournalRecord receipt = append("receipt", "ActionApplied", {}, receipt_payload(action),
                                         outcome.settlement_guard());
  EXPECT_EQ(claim.action_kind, engine::ActionKind::kInstallCapability);
  EXPECT_EQ(raw_text(path(), "SELECT action_kind FROM engine_install_claims"),
            "InstallCapability");
  EXPECT_EQ(raw_text(path(), "SELECT outcome FROM engine_install_outcomes"), "applied");
  EXPECT_EQ(raw_text(path(), "SELECT outcome FROM engine_install_claim_settlements"), "applied");
  const Json claim_fields{{"action_content_digest", claim.action_content_digest},
                          {"action_expires_at", claim.action_expires_at},
                          {"action_id", claim.action_id},
                          {"action_json", claim.action_json},
                          {"action_kind", "InstallCapability"},
                          {"authorization_digest", claim.authorization_digest},
                          {"claimed_at", claim.claimed_at},
                          {"claimed_head_record_digest", claim.claimed_head_record_digest},
                          {"claimed_head_revision", claim.claimed_head_revision},
                          {"claimed_head_state_digest", claim.claimed_head_state_digest},
                          {"execution_binding_digest", claim.execution_binding_digest},
                          {"execution_binding_json", claim.execution_binding_json},
                          {"issuing_record_digest", claim.issuing_record_digest},
                          {"precondition_revision", claim.precondition_revision},
                          {"stream_key", stream().stream_key()}};
  EXPECT_EQ(raw_text(path(), "SELECT claim_digest FROM engine_install_claims"),
            core::canonical_digest(claim_fields));
  const Json settlement_fields{{"action_content_digest", claim.action_content_digest},
                               {"action_id", claim.action_id},
                               {"claim_digest", claim.claim_digest},
                               {"outcome", "applied"},
                               {"receipt_event_content_digest", receipt.event_content_digest},
                               {"receipt_event_id", receipt.event_id},
                               {"receipt_record_digest", receipt.record_digest},
                               {"stream_key", stream().stream_key()}};
  EXPECT_EQ(raw_text(path(), "SELECT settlement_digest FROM engine_install_claim_settlements"),
            core::canonical_digest(settlement_fields));
  reopen();
  EXPECT_EQ(s().find_install_claim(stream(), "action-install-1"), claim);
  s().verify();
}

TEST_F(ClaimStoreTest, FailedInstallRowsPersistFailed) {
  journal_install_action();
  Json action = install_action(2);
  s().claim_install(claim_request(action));
  auto outcome = s().record_install_outcome(install_outcome(action, InstallOutcome::kFailed));
  append("receipt-failed", "ActionFailed", {}, receipt_payload(action), outcome.settlement_guard());
  EXPECT_EQ(raw_text(path(), "SELECT outcome FROM engine_install_outcomes"), "failed");
  EXPECT_EQ(raw_text(path(), "SELECT outcome FROM engine_install_claim_settlements"), "failed");
  reopen();
  EXPECT_EQ(s().install_execution_status(stream(), "action-install-1").outcome,
            InstallOutcome::kFailed);
}

// A claim row's action kind is parsed where it is read: a spelling outside kActionKindStrings is
// typed corruption on verify, on a lookup and on open, and nothing is written. (The claim digest
// still matches the row's other columns, so only the parse can catch it.)
TEST_F(ClaimStoreTest, UnknownStoredActionKindIsTypedCorruptionAndNothingIsWritten) {
  journal_install_action();
  s().claim_install(claim_request(install_action(2)));
  raw_exec(path(), "UPDATE engine_install_claims SET action_kind = 'Explode'");
  CTX_EXPECT_THROW(s().verify(), engine::JournalCorruption, "unknown action kind");
  CTX_EXPECT_THROW(s().find_install_claim(stream(), "action-install-1"), engine::JournalCorruption,
                   "unknown action kind");
  store_.reset();
  const std::string before = raw_file_bytes(path());
  CTX_EXPECT_THROW(s(), engine::JournalCorruption, "unknown action kind");
  EXPECT_EQ(raw_file_bytes(path()), before);
  EXPECT_EQ(raw_text(path(), "SELECT action_kind FROM engine_install_claims"), "Explode");
}

// A known but wrong spelling is corruption too (the install table holds install claims only).
TEST_F(ClaimStoreTest, ForeignStoredActionKindIsJournalCorruption) {
  journal_install_action();
  s().claim_install(claim_request(install_action(2)));
  store_.reset();
  raw_exec(path(), "UPDATE engine_install_claims SET action_kind = 'ActivateCapability'");
  CTX_EXPECT_THROW(s(), engine::JournalCorruption, "install claim of 'action-install-1'");
}

// A settlement row's install outcome is parsed where it is read: an unknown spelling is typed
// corruption (the settlement digest was computed over "applied", so only the parse catches a
// mapping of unknown text to applied), and nothing is written.
TEST_F(ClaimStoreTest, UnknownStoredSettlementOutcomeIsTypedCorruptionAndNothingIsWritten) {
  journal_install_action();
  Json action = install_action(2);
  s().claim_install(claim_request(action));
  auto outcome = s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied));
  append("receipt", "ActionApplied", {}, receipt_payload(action), outcome.settlement_guard());
  // The schema's CHECK refuses the spelling; a hand edit that ignores it is what is modelled.
  raw_exec(path(),
           "PRAGMA ignore_check_constraints = ON; "
           "UPDATE engine_install_claim_settlements SET outcome = 'Applied'");
  CTX_EXPECT_THROW(s().verify(), engine::JournalCorruption,
                   "install settlement has an unknown outcome");
  store_.reset();
  const std::string before = raw_file_bytes(path());
  CTX_EXPECT_THROW(s(), engine::JournalCorruption, "install settlement has an unknown outcome");
  EXPECT_EQ(raw_file_bytes(path()), before);
  EXPECT_EQ(raw_text(path(), "SELECT outcome FROM engine_install_claim_settlements"), "Applied");
}

TEST_F(ClaimStoreTest, OrphanOutcomeRowIsJournalCorruption) {
  journal_install_action();
  Json action = install_action(2);
  s().claim_install(claim_request(action));
  s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied));
  store_.reset();
  raw_exec(path(), "DELETE FROM engine_install_claims");
  CTX_EXPECT_THROW(s(), engine::JournalCorruption, "without a claim");
}

// Runs `steps` in a forked child that then kills itself with SIGKILL (no destructors, no
// rollback handlers: a real crash), and checks that it died that way.
void crash_child_after(const std::function<void()>& steps) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      steps();
    } catch (...) {
      ::_exit(2);
    }
    ::kill(::getpid(), SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(ClaimStoreTest, CrashAfterClaimBeforeOutcomeRecoversInAFreshStore) {
  journal_install_action();
  Json action = install_action(2);
  engine::ClaimRequest request = claim_request(action);
  store_.reset();  // no connection crosses the fork
  crash_child_after([&] {
    SqliteJournalStore child(path(), clock_);
    child.claim_install(request);
  });
  // Recovery: the claim is durable, the outcome absent; the one-use claim cannot be taken again,
  // and the work resumes at the outcome step.
  auto status = s().install_execution_status(stream(), "action-install-1");
  EXPECT_TRUE(status.claimed);
  EXPECT_FALSE(status.outcome_recorded);
  EXPECT_FALSE(status.settled);
  EXPECT_EQ(status.execution_binding_digest, kBinding);
  EXPECT_THROW(s().claim_install(claim_request(action)), engine::InstallActionAlreadyClaimed);
  auto outcome = s().record_install_outcome(install_outcome(action, InstallOutcome::kApplied));
  append("receipt", "ActionApplied", {}, receipt_payload(action), outcome.settlement_guard());
  EXPECT_TRUE(s().install_execution_status(stream(), "action-install-1").settled);
  s().verify();
}

TEST_F(ClaimStoreTest, CrashAfterOutcomeBeforeSettlementResumesAtSettlement) {
  journal_install_action();
  Json action = install_action(2);
  engine::ClaimRequest request = claim_request(action);
  engine::InstallOutcomeRequest outcome_request = install_outcome(action, InstallOutcome::kApplied);
  store_.reset();
  crash_child_after([&] {
    SqliteJournalStore child(path(), clock_);
    child.claim_install(request);
    child.record_install_outcome(outcome_request);
  });
  auto status = s().install_execution_status(stream(), "action-install-1");
  ASSERT_TRUE(status.outcome_recorded);
  EXPECT_FALSE(status.settled);
  // Rebuild the guard from the stored outcome and settle; the journal advances exactly once.
  auto stored = s().find_install_outcome(stream(), "action-install-1");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->outcome_digest, status.outcome_digest);
  append("ctx-install-receipt-" + stored->outcome_digest, "ActionApplied", {},
         receipt_payload(action), stored->settlement_guard());
  EXPECT_EQ(s().head(stream()).revision, 3);
  EXPECT_TRUE(s().install_execution_status(stream(), "action-install-1").settled);
}

}  // namespace
}  // namespace ctx::testing::journal
