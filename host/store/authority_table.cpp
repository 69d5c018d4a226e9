#include "host/store/authority_table.hpp"

#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/journal_table.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {

using engine::ActionClaim;
using engine::ClaimRequest;
using engine::EngineStoreError;
using engine::ExecutionOutcome;
using engine::GuardMode;
using engine::InstallOutcome;
using engine::JournalCorruption;
using engine::JournalRecord;
using engine::Revision;
using engine::RevisionConflict;
using engine::SettlementGuard;
using engine::StreamId;
using Json = core::Json;

namespace {

bool is_trimmed(std::string_view value) noexcept {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  return !value.empty() && !space(value.front()) && !space(value.back());
}

void require_digest(const std::string& value, const char* field) {
  if (!core::is_sha256_hex(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase sha-256 digest");
  }
}

void require_digest(const std::optional<std::string>& value, const char* field) {
  if (value) require_digest(*value, field);
}

// The fields a claim needs from a HostAction's canonical JSON text.
struct ParsedAction {
  std::string action_id;
  std::string kind;
  Revision precondition_revision = 0;
  std::string expires_at;
  core::Timestamp expires{};
  std::string content_digest;
};

ParsedAction parse_action(const std::string& action_json) {
  Json action;
  try {
    action = core::parse_canonical_json(action_json);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("action_json must be canonical json");
  }
  if (!action.is_object()) throw InvalidArgument("action_json must be an object");
  ParsedAction parsed;
  auto id = action.find("action_id");
  if (id == action.end() || !id->is_string() || !is_trimmed(id->get<std::string>())) {
    throw InvalidArgument("action_id must be a non-empty trimmed string");
  }
  parsed.action_id = id->get<std::string>();
  auto kind = action.find("kind");
  if (kind == action.end() || !kind->is_string()) throw InvalidArgument("action kind is missing");
  parsed.kind = kind->get<std::string>();
  auto precondition = action.find("precondition_revision");
  if (precondition == action.end() || !precondition->is_number_integer() ||
      precondition->get<std::int64_t>() < 1) {
    throw InvalidArgument("action precondition_revision must be an integer >= 1");
  }
  parsed.precondition_revision = precondition->get<std::int64_t>();
  auto expires = action.find("expires_at");
  if (expires == action.end() || !expires->is_string() ||
      !core::is_normalized_rfc3339(expires->get<std::string>())) {
    throw InvalidArgument("action expires_at is required for physical action");
  }
  parsed.expires_at = expires->get<std::string>();
  parsed.expires = core::parse_rfc3339(parsed.expires_at);
  parsed.content_digest = core::sha256_hex(action_json);
  return parsed;
}

// The reducer event inside a ReplayInput (spec §4): kind, payload and occurred_at.
struct ReceiptEvent {
  std::string kind;
  std::string action_id;
  std::string action_content_digest;
  std::string occurred_at;
};

std::optional<ReceiptEvent> parse_receipt_event(const std::string& replay_json) {
  Json replay = core::parse_json(replay_json);
  if (!replay.is_object()) return std::nullopt;
  auto event = replay.find("reducer_event");
  if (event == replay.end() || !event->is_object()) return std::nullopt;
  auto text = [](const Json& object, const char* key) -> std::string {
    auto it = object.find(key);
    return (it != object.end() && it->is_string()) ? it->get<std::string>() : std::string();
  };
  ReceiptEvent receipt;
  receipt.kind = text(*event, "kind");
  receipt.occurred_at = text(*event, "occurred_at");
  auto payload = event->find("payload");
  if (payload != event->end() && payload->is_object()) {
    receipt.action_id = text(*payload, "action_id");
    receipt.action_content_digest = text(*payload, "action_content_digest");
  }
  return receipt;
}

// sha(canon-U{action_content_digest, action_id, claim_digest, <outcome key>, receipt...}).
std::string settlement_digest(const char* outcome_key, const ActionClaim& claim,
                              const std::string& outcome_field, const JournalRecord& receipt) {
  return core::canonical_digest(Json{{"action_content_digest", claim.action_content_digest},
                                     {"action_id", claim.action_id},
                                     {"claim_digest", claim.claim_digest},
                                     {outcome_key, outcome_field},
                                     {"receipt_event_content_digest", receipt.event_content_digest},
                                     {"receipt_event_id", receipt.event_id},
                                     {"receipt_record_digest", receipt.record_digest},
                                     {"stream_key", claim.stream.stream_key()}});
}

}  // namespace

// ---- Traits ----

#define CTX_CLAIM_TAIL                                                                         \
  "precondition_revision, action_json, issuing_record_digest, claimed_head_revision, "         \
  "claimed_head_record_digest, claimed_head_state_digest, action_expires_at, claimed_at, "     \
  "authorization_digest, execution_binding_json, execution_binding_digest, claim_digest"
#define CTX_CLAIM_VALUES "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
#define CTX_SETTLEMENT_TAIL \
  ", receipt_event_id, receipt_event_content_digest, receipt_record_digest, settlement_digest"

struct InstallAuthority {
  static constexpr const char* kName = "install";
  static constexpr const char* kActionKind = "InstallCapability";
  static constexpr const char* kSettlementOutcomeKey = "outcome";
  static constexpr bool kAcceptsInstalledBy = false;
  static constexpr bool kObservationMustPrecedeExpiry = false;
  static constexpr bool kReceiptOccursAtObservation = false;

  // Columns 0..15: stream_key, action_id, action_content_digest, action_kind, then the tail.
  static constexpr StaticSql kSelectClaim{
      "SELECT stream_key, action_id, action_content_digest, action_kind, " CTX_CLAIM_TAIL
      " FROM engine_install_claims WHERE stream_key = ?1 AND action_id = ?2"};
  static constexpr StaticSql kInsertClaim{
      "INSERT INTO engine_install_claims (stream_key, action_id, action_content_digest, "
      "action_kind, " CTX_CLAIM_TAIL ") VALUES (?1, ?2, ?3, ?4, " CTX_CLAIM_VALUES};
  // Columns 0..8: action_id .. outcome_digest with the outcome name at 4.
  static constexpr StaticSql kSelectOutcome{
      "SELECT action_id, action_content_digest, claim_digest, execution_binding_digest, "
      "outcome, observed_material_identity_digest, verification_digest, observed_at, "
      "outcome_digest FROM engine_install_outcomes WHERE stream_key = ?1 AND action_id = ?2"};
  static constexpr StaticSql kInsertOutcome{
      "INSERT INTO engine_install_outcomes (stream_key, action_id, action_content_digest, "
      "claim_digest, execution_binding_digest, outcome, observed_material_identity_digest, "
      "verification_digest, observed_at, outcome_digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
      "?8, ?9, ?10)"};
  static constexpr StaticSql kSelectSettlement{
      "SELECT action_content_digest, claim_digest, outcome" CTX_SETTLEMENT_TAIL
      " FROM engine_install_claim_settlements WHERE stream_key = ?1 AND action_id = ?2"};
  static constexpr StaticSql kInsertSettlement{
      "INSERT INTO engine_install_claim_settlements (stream_key, action_id, "
      "action_content_digest, claim_digest, outcome" CTX_SETTLEMENT_TAIL
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"};
  static constexpr StaticSql kAllKeys{
      "SELECT stream_key, action_id FROM engine_install_claims UNION "
      "SELECT stream_key, action_id FROM engine_install_outcomes UNION "
      "SELECT stream_key, action_id FROM engine_install_claim_settlements"};

  static std::string claim_digest(const ActionClaim& c) { return engine::install_claim_digest(c); }
  static std::string outcome_digest(const ExecutionOutcome& o) {
    return engine::install_outcome_digest(o);
  }
  static std::string outcome_field(const ExecutionOutcome& o) {
    return engine::install_outcome_name(*o.outcome);
  }

  [[noreturn]] static void already_claimed(const std::string& id) {
    throw engine::InstallActionAlreadyClaimed("install action '" + id +
                                              "' has already been claimed");
  }
  [[noreturn]] static void claimed_cannot_expire(const std::string& id) {
    throw engine::InstallActionAlreadyClaimed("claimed install action '" + id +
                                              "' cannot expire as unclaimed");
  }
  [[noreturn]] static void claim_expired(const std::string& id) {
    throw engine::InstallActionClaimExpired("install action '" + id +
                                            "' expired before it was claimed");
  }
  [[noreturn]] static void observation_expired(const std::string& id) {
    throw engine::InstallActionClaimExpired("install action '" + id + "' expired");
  }
  [[noreturn]] static void settled(const std::string& id) {
    throw engine::InstallActionClaimSettled("install action '" + id +
                                            "' already has a terminal settlement");
  }
  [[noreturn]] static void outcome_without_claim(const std::string& id) {
    throw engine::InstallExecutionOutcomeRequired("install action '" + id +
                                                  "' has no durable execution claim");
  }
  [[noreturn]] static void receipt_without_claim(const std::string& id) {
    throw engine::InstallActionClaimRequired("install action '" + id +
                                             "' must be claimed before receipt commit");
  }
  [[noreturn]] static void receipt_without_outcome(const std::string& id) {
    throw engine::InstallExecutionOutcomeRequired("install action '" + id +
                                                  "' has no verified execution outcome");
  }
  [[noreturn]] static void conflict(const std::string& message) {
    throw engine::InstallExecutionOutcomeConflict("install " + message);
  }
};

struct ActivationAuthority {
  static constexpr const char* kName = "activation";
  static constexpr const char* kActionKind = "ActivateCapability";
  static constexpr const char* kSettlementOutcomeKey = "outcome_digest";
  static constexpr bool kAcceptsInstalledBy = true;
  static constexpr bool kObservationMustPrecedeExpiry = true;
  static constexpr bool kReceiptOccursAtObservation = true;

  // Same column positions as InstallAuthority (the kind is a constant, the outcome NULL; the
  // insert leaves ?4 / ?6 unused).
  static constexpr StaticSql kSelectClaim{
      "SELECT stream_key, action_id, action_content_digest, 'ActivateCapability', " CTX_CLAIM_TAIL
      " FROM engine_activation_claims WHERE stream_key = ?1 AND action_id = ?2"};
  static constexpr StaticSql kInsertClaim{
      "INSERT INTO engine_activation_claims (stream_key, action_id, action_content_digest, "
      CTX_CLAIM_TAIL ") VALUES (?1, ?2, ?3, " CTX_CLAIM_VALUES};
  static constexpr StaticSql kSelectOutcome{
      "SELECT action_id, action_content_digest, claim_digest, execution_binding_digest, "
      "NULL, observed_material_identity_digest, verification_digest, observed_at, "
      "outcome_digest FROM engine_activation_outcomes WHERE stream_key = ?1 AND action_id = ?2"};
  static constexpr StaticSql kInsertOutcome{
      "INSERT INTO engine_activation_outcomes (stream_key, action_id, action_content_digest, "
      "claim_digest, execution_binding_digest, observed_material_identity_digest, "
      "verification_digest, observed_at, outcome_digest) VALUES (?1, ?2, ?3, ?4, ?5, ?7, ?8, "
      "?9, ?10)"};
  static constexpr StaticSql kSelectSettlement{
      "SELECT action_content_digest, claim_digest, outcome_digest" CTX_SETTLEMENT_TAIL
      " FROM engine_activation_claim_settlements WHERE stream_key = ?1 AND action_id = ?2"};
  static constexpr StaticSql kInsertSettlement{
      "INSERT INTO engine_activation_claim_settlements (stream_key, action_id, "
      "action_content_digest, claim_digest, outcome_digest" CTX_SETTLEMENT_TAIL
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"};
  static constexpr StaticSql kAllKeys{
      "SELECT stream_key, action_id FROM engine_activation_claims UNION "
      "SELECT stream_key, action_id FROM engine_activation_outcomes UNION "
      "SELECT stream_key, action_id FROM engine_activation_claim_settlements"};

  static std::string claim_digest(const ActionClaim& c) {
    return engine::activation_claim_digest(c);
  }
  static std::string outcome_digest(const ExecutionOutcome& o) {
    return engine::activation_outcome_digest(o);
  }
  static std::string outcome_field(const ExecutionOutcome& o) { return o.outcome_digest; }

  [[noreturn]] static void already_claimed(const std::string& id) {
    throw engine::ActivationActionAlreadyClaimed("activation action '" + id +
                                                 "' is already claimed");
  }
  [[noreturn]] static void claimed_cannot_expire(const std::string& id) {
    throw engine::ActivationActionAlreadyClaimed("claimed activation action '" + id +
                                                 "' cannot expire as unclaimed");
  }
  [[noreturn]] static void claim_expired(const std::string& id) {
    throw engine::ActivationActionClaimExpired("activation action '" + id +
                                               "' expired before claim");
  }
  [[noreturn]] static void observation_expired(const std::string& id) {
    throw engine::ActivationActionClaimExpired("activation action '" + id +
                                               "' expired before observation");
  }
  [[noreturn]] static void settled(const std::string& id) {
    throw engine::ActivationActionClaimSettled("activation action '" + id +
                                               "' is already settled");
  }
  [[noreturn]] static void outcome_without_claim(const std::string& id) {
    throw engine::ActivationExecutionOutcomeRequired("activation action '" + id +
                                                     "' has no durable claim");
  }
  [[noreturn]] static void receipt_without_claim(const std::string& id) {
    throw engine::ActivationExecutionOutcomeRequired("activation action '" + id +
                                                     "' has no durable claim");
  }
  [[noreturn]] static void receipt_without_outcome(const std::string& id) {
    throw engine::ActivationExecutionOutcomeRequired("activation action '" + id +
                                                     "' has no verified outcome");
  }
  [[noreturn]] static void conflict(const std::string& message) {
    throw engine::ActivationExecutionOutcomeConflict("activation " + message);
  }
};

#undef CTX_CLAIM_TAIL
#undef CTX_CLAIM_VALUES
#undef CTX_SETTLEMENT_TAIL

// ---- Rows ----

template <typename Traits>
std::optional<ActionClaim> AuthorityTable<Traits>::claim_row(const StreamId& stream,
                                                             std::string_view action_id) {
  auto row = db_.cached(Traits::kSelectClaim);
  row->bind(1, stream.stream_key()).bind(2, action_id);
  if (!row->step()) return std::nullopt;
  if (row->text(0) != stream.stream_key()) throw JournalCorruption("claim row has another stream");
  return ActionClaim{
      .stream = stream,
      .action_id = row->text(1),
      .action_content_digest = row->text(2),
      .action_kind = row->text(3),
      .precondition_revision = row->integer(4),
      .action_json = row->text(5),
      .issuing_record_digest = row->text(6),
      .claimed_head_revision = row->integer(7),
      .claimed_head_record_digest = row->text(8),
      .claimed_head_state_digest = row->text(9),
      .action_expires_at = row->text(10),
      .claimed_at = row->text(11),
      .authorization_digest = row->text(12),
      .execution_binding_json = row->text(13),
      .execution_binding_digest = row->text(14),
      .claim_digest = row->text(15),
  };
}

template <typename Traits>
std::optional<ExecutionOutcome> AuthorityTable<Traits>::outcome_row(const StreamId& stream,
                                                                    std::string_view action_id) {
  auto row = db_.cached(Traits::kSelectOutcome);
  row->bind(1, stream.stream_key()).bind(2, action_id);
  if (!row->step()) return std::nullopt;
  ExecutionOutcome outcome{
      .stream = stream,
      .action_id = row->text(0),
      .action_content_digest = row->text(1),
      .claim_digest = row->text(2),
      .execution_binding_digest = row->text(3),
      .outcome = std::nullopt,
      .observed_material_identity_digest = row->optional_text(5),
      .verification_digest = row->text(6),
      .observed_at = row->text(7),
      .outcome_digest = row->text(8),
  };
  if (!row->is_null(4)) {
    const std::string name = row->text(4);
    if (name == engine::install_outcome_name(InstallOutcome::kApplied)) {
      outcome.outcome = InstallOutcome::kApplied;
    } else if (name == engine::install_outcome_name(InstallOutcome::kFailed)) {
      outcome.outcome = InstallOutcome::kFailed;
    } else {
      throw JournalCorruption("install outcome has an unknown outcome");
    }
  }
  return outcome;
}

template <typename Traits>
std::optional<SettlementRow> AuthorityTable<Traits>::settlement_row(const StreamId& stream,
                                                                    std::string_view action_id) {
  auto row = db_.cached(Traits::kSelectSettlement);
  row->bind(1, stream.stream_key()).bind(2, action_id);
  if (!row->step()) return std::nullopt;
  return SettlementRow{row->text(0), row->text(1), row->text(2), row->text(3),
                       row->text(4), row->text(5), row->text(6)};
}

// ---- Verification ----

template <typename Traits>
void AuthorityTable<Traits>::verify_claim(const ActionClaim& claim) {
  auto fail = [&](const std::string& what) {
    throw JournalCorruption(std::string(Traits::kName) + " claim of '" + claim.action_id +
                            "': " + what);
  };
  if (claim.claim_digest != Traits::claim_digest(claim)) {
    fail("claim_digest does not match claim content");
  }
  ParsedAction action;
  try {
    action = parse_action(claim.action_json);
  } catch (const InvalidArgument& e) {
    fail(e.what());
  }
  if (action.action_id != claim.action_id ||
      action.content_digest != claim.action_content_digest ||
      action.precondition_revision != claim.precondition_revision ||
      action.expires_at != claim.action_expires_at || action.kind != Traits::kActionKind ||
      claim.action_kind != Traits::kActionKind) {
    fail("claim does not match its action");
  }
  if (!core::is_sha256_hex(claim.execution_binding_digest) ||
      !core::is_sha256_hex(claim.authorization_digest)) {
    fail("claim digests are malformed");
  }
  std::optional<JournalRecord> issuing = journal_.at(claim.stream, claim.precondition_revision);
  if (!issuing || issuing->record_digest != claim.issuing_record_digest) {
    fail("issuing record anchor is broken");
  }
  std::optional<JournalRecord> claimed = journal_.at(claim.stream, claim.claimed_head_revision);
  if (!claimed || claimed->record_digest != claim.claimed_head_record_digest ||
      claimed->result_state_digest != claim.claimed_head_state_digest ||
      claim.claimed_head_revision < claim.precondition_revision) {
    fail("claimed head anchor is broken");
  }
  try {
    if (core::parse_rfc3339(claim.claimed_at) >= action.expires) fail("claimed after expiry");
  } catch (const InvalidArgument&) {
    fail("claimed_at is not rfc 3339");
  }
}

template <typename Traits>
void AuthorityTable<Traits>::verify_outcome(const ExecutionOutcome& outcome,
                                            const ActionClaim& claim) {
  auto fail = [&](const std::string& what) {
    throw JournalCorruption(std::string(Traits::kName) + " outcome of '" + outcome.action_id +
                            "': " + what);
  };
  if (outcome.action_content_digest != claim.action_content_digest ||
      outcome.claim_digest != claim.claim_digest ||
      outcome.execution_binding_digest != claim.execution_binding_digest) {
    fail("outcome does not match its claim");
  }
  if (outcome.outcome_digest != Traits::outcome_digest(outcome)) {
    fail("outcome_digest does not match outcome content");
  }
  const bool applied = outcome.outcome.value_or(InstallOutcome::kApplied) == InstallOutcome::kApplied;
  if (applied != outcome.observed_material_identity_digest.has_value()) {
    fail("observed material does not match the outcome");
  }
  try {
    if (core::parse_rfc3339(outcome.observed_at) < core::parse_rfc3339(claim.claimed_at)) {
      fail("observed before the claim");
    }
  } catch (const InvalidArgument&) {
    fail("observed_at is not rfc 3339");
  }
}

template <typename Traits>
void AuthorityTable<Traits>::verify_settlement(const SettlementRow& row, const ActionClaim& claim,
                                               const std::optional<ExecutionOutcome>& outcome) {
  auto fail = [&](const std::string& what) {
    throw JournalCorruption(std::string(Traits::kName) + " settlement of '" + claim.action_id +
                            "': " + what);
  };
  if (!outcome) fail("settlement has no outcome");
  if (row.action_content_digest != claim.action_content_digest ||
      row.claim_digest != claim.claim_digest) {
    fail("settlement does not match its claim");
  }
  if (row.outcome != Traits::outcome_field(*outcome)) fail("settlement does not match its outcome");
  std::optional<JournalRecord> receipt = journal_.by_event_id(row.receipt_event_id);
  if (!receipt || receipt->stream != claim.stream ||
      receipt->record_digest != row.receipt_record_digest ||
      receipt->event_content_digest != row.receipt_event_content_digest) {
    fail("receipt record anchor is broken");
  }
  if (row.settlement_digest !=
      settlement_digest(Traits::kSettlementOutcomeKey, claim, row.outcome, *receipt)) {
    fail("settlement_digest does not match content");
  }
}

template <typename Traits>
Authority AuthorityTable<Traits>::load(const StreamId& stream, std::string_view action_id) {
  Authority a;
  a.claim = claim_row(stream, action_id);
  a.outcome = outcome_row(stream, action_id);
  a.settlement = settlement_row(stream, action_id);
  if (!a.claim) {
    if (a.outcome || a.settlement) {
      throw JournalCorruption(std::string(Traits::kName) +
                              " outcome or settlement without a claim");
    }
    return a;
  }
  verify_claim(*a.claim);
  if (a.outcome) verify_outcome(*a.outcome, *a.claim);
  if (a.settlement) verify_settlement(*a.settlement, *a.claim, a.outcome);
  return a;
}

template <typename Traits>
void AuthorityTable<Traits>::verify_all() {
  std::vector<std::pair<std::string, std::string>> keys;  // stream_key, action_id
  {
    auto stmt = db_.cached(Traits::kAllKeys);
    while (stmt->step()) keys.emplace_back(stmt->text(0), stmt->text(1));
  }
  for (const auto& [stream_key, action_id] : keys) load(stream_from_key(stream_key), action_id);
}

// ---- Claims ----

template <typename Traits>
ActionClaim AuthorityTable<Traits>::claim(
    const ClaimRequest& request, const std::function<core::Timestamp()>& trusted_now,
    const std::function<void(core::Timestamp)>& before_insert) {
  const std::string what = Traits::kName;
  if (request.expected_revision < 1) throw InvalidArgument("expected_revision must be >= 1");
  require_digest(request.expected_head_record_digest, "expected_head_record_digest");
  require_digest(request.authorization_digest, "authorization_digest");
  require_digest(request.execution_binding_digest, "execution_binding_digest");
  require_digest(request.installed_by_action_content_digest, "installed_by_action_content_digest");
  if (!Traits::kAcceptsInstalledBy && request.installed_by_action_content_digest) {
    throw InvalidArgument("installed_by_action_content_digest is for activation claims only");
  }
  try {
    if (!core::parse_canonical_json(request.execution_binding_json, core::Encoding::kAscii)
             .is_object()) {
      throw InvalidArgument("not an object");
    }
  } catch (const InvalidArgument&) {
    throw InvalidArgument("execution_binding_json must be canonical json");
  }
  ParsedAction action = parse_action(request.action_json);
  if (action.kind != Traits::kActionKind) {
    throw InvalidArgument(what + " claim requires an exact " + Traits::kActionKind + " action");
  }

  Authority existing = load(request.stream, action.action_id);
  if (existing.claim) {
    if (existing.claim->action_content_digest != action.content_digest) {
      throw JournalCorruption(what + " action '" + action.action_id +
                              "' is bound to different claimed content");
    }
    Traits::already_claimed(action.action_id);
  }
  const engine::JournalHead head = journal_.head(request.stream);
  if (head.revision != request.expected_revision ||
      head.record_digest != request.expected_head_record_digest) {
    throw RevisionConflict(request.expected_revision, head.revision);
  }
  std::optional<JournalRecord> issuing = journal_.at(request.stream, action.precondition_revision);
  if (!issuing) {
    throw InvalidArgument(what + " action is not exact journal authority: no issuing record");
  }
  Json transition = core::parse_json(issuing->transition_json);
  int matches = 0;
  if (auto actions = transition.find("actions");
      actions != transition.end() && actions->is_array()) {
    for (const Json& emitted : *actions) {
      if (core::canonical_json(emitted) == request.action_json) ++matches;
    }
  }
  if (matches != 1) {
    throw InvalidArgument(what +
                          " action is not exact journal authority: the issuing record did "
                          "not emit it exactly once");
  }
  const core::Timestamp now = trusted_now();
  if (now >= action.expires) Traits::claim_expired(action.action_id);
  if (before_insert) before_insert(now);
  ActionClaim claim{
      .stream = request.stream,
      .action_id = action.action_id,
      .action_content_digest = action.content_digest,
      .action_kind = Traits::kActionKind,
      .precondition_revision = action.precondition_revision,
      .action_json = request.action_json,
      .issuing_record_digest = issuing->record_digest,
      .claimed_head_revision = head.revision,
      .claimed_head_record_digest = *head.record_digest,
      .claimed_head_state_digest = *head.state_digest,
      .action_expires_at = action.expires_at,
      .claimed_at = core::format_rfc3339(now),
      .authorization_digest = request.authorization_digest,
      .execution_binding_json = request.execution_binding_json,
      .execution_binding_digest = request.execution_binding_digest,
      .claim_digest = {},
  };
  claim.claim_digest = Traits::claim_digest(claim);
  auto insert = db_.cached(Traits::kInsertClaim);
  insert->bind(1, claim.stream.stream_key()).bind(2, claim.action_id);
  insert->bind(3, claim.action_content_digest).bind(4, claim.action_kind);
  insert->bind(5, claim.precondition_revision).bind(6, claim.action_json);
  insert->bind(7, claim.issuing_record_digest).bind(8, claim.claimed_head_revision);
  insert->bind(9, claim.claimed_head_record_digest).bind(10, claim.claimed_head_state_digest);
  insert->bind(11, claim.action_expires_at).bind(12, claim.claimed_at);
  insert->bind(13, claim.authorization_digest).bind(14, claim.execution_binding_json);
  insert->bind(15, claim.execution_binding_digest).bind(16, claim.claim_digest);
  insert->run();
  return claim;
}

// ---- Outcomes ----

template <typename Traits>
ExecutionOutcome AuthorityTable<Traits>::record_outcome(
    const OutcomeFacts& facts, const std::function<core::Timestamp()>& trusted_now) {
  require_digest(facts.execution_binding_digest, "execution_binding_digest");
  require_digest(facts.verification_digest, "verification_digest");
  require_digest(facts.observed_material_identity_digest, "observed_material_identity_digest");
  require_digest(facts.expected_result_material_identity_digest,
                 "expected_result_material_identity_digest");
  const bool applied = facts.outcome.value_or(InstallOutcome::kApplied) == InstallOutcome::kApplied;
  const auto& observed = facts.observed_material_identity_digest;
  if (applied && !observed) {
    throw InvalidArgument("applied outcome requires an observed material identity");
  }
  if (!applied && observed) {
    throw InvalidArgument("failed outcome requires verified material absence");
  }
  ParsedAction action = parse_action(facts.action_json);

  Authority a = load(facts.stream, action.action_id);
  if (!a.claim || a.claim->action_content_digest != action.content_digest) {
    Traits::outcome_without_claim(action.action_id);
  }
  if (a.claim->execution_binding_digest != facts.execution_binding_digest) {
    Traits::conflict("outcome execution binding does not match the claim");
  }
  if (a.settlement) Traits::settled(action.action_id);
  const auto& expected = facts.expected_result_material_identity_digest;
  if (applied && expected && *observed != *expected) {
    Traits::conflict("outcome does not match authorized result material");
  }
  if (a.outcome) {
    if (a.outcome->outcome == facts.outcome &&
        a.outcome->observed_material_identity_digest == observed &&
        a.outcome->verification_digest == facts.verification_digest) {
      return *a.outcome;  // identical retry
    }
    Traits::conflict("action '" + action.action_id + "' already has a different outcome");
  }
  const core::Timestamp now = trusted_now();
  if (now < core::parse_rfc3339(a.claim->claimed_at)) {
    throw EngineStoreError("trusted utc clock moved before the " + std::string(Traits::kName) +
                           " claim");
  }
  if (Traits::kObservationMustPrecedeExpiry && now >= action.expires) {
    Traits::observation_expired(action.action_id);
  }
  ExecutionOutcome outcome{
      .stream = facts.stream,
      .action_id = action.action_id,
      .action_content_digest = action.content_digest,
      .claim_digest = a.claim->claim_digest,
      .execution_binding_digest = facts.execution_binding_digest,
      .outcome = facts.outcome,
      .observed_material_identity_digest = observed,
      .verification_digest = facts.verification_digest,
      .observed_at = core::format_rfc3339(now),
      .outcome_digest = {},
  };
  outcome.outcome_digest = Traits::outcome_digest(outcome);
  auto insert = db_.cached(Traits::kInsertOutcome);
  insert->bind(1, facts.stream.stream_key()).bind(2, outcome.action_id);
  insert->bind(3, outcome.action_content_digest).bind(4, outcome.claim_digest);
  insert->bind(5, outcome.execution_binding_digest);
  if (outcome.outcome) insert->bind(6, std::string_view(engine::install_outcome_name(*outcome.outcome)));
  insert->bind_optional(7, outcome.observed_material_identity_digest);
  insert->bind(8, outcome.verification_digest).bind(9, outcome.observed_at);
  insert->bind(10, outcome.outcome_digest);
  insert->run();
  return outcome;
}

// ---- Settlements ----

template <typename Traits>
std::optional<PendingSettlement> AuthorityTable<Traits>::check_settlement(
    const StreamId& stream, const SettlementGuard& guard, const JournalRecord& receipt) {
  const std::string& id = guard.action_id;
  Authority a = load(stream, id);
  if (guard.mode == GuardMode::kExpired) {
    if (a.claim) Traits::claimed_cannot_expire(id);
    return std::nullopt;
  }
  if (a.settlement) Traits::settled(id);
  if (!a.claim) Traits::receipt_without_claim(id);
  if (!a.outcome) Traits::receipt_without_outcome(id);
  const bool applied_outcome =
      a.outcome->outcome.value_or(InstallOutcome::kApplied) == InstallOutcome::kApplied;
  const bool mode_matches = (guard.mode == GuardMode::kApplied) == applied_outcome;
  std::optional<ReceiptEvent> event = parse_receipt_event(receipt.replay_json);
  const char* receipt_kind = guard.mode == GuardMode::kApplied ? "ActionApplied" : "ActionFailed";
  const bool receipt_matches =
      event && event->kind == receipt_kind && event->action_id == id &&
      event->action_content_digest == guard.action_content_digest &&
      (!Traits::kReceiptOccursAtObservation || event->occurred_at == a.outcome->observed_at);
  if (a.claim->action_content_digest != guard.action_content_digest || !mode_matches ||
      a.outcome->outcome_digest != *guard.execution_outcome_digest || !receipt_matches) {
    Traits::conflict("receipt does not match its verified execution outcome");
  }
  return PendingSettlement{*a.claim, Traits::outcome_field(*a.outcome)};
}

template <typename Traits>
void AuthorityTable<Traits>::settle(const PendingSettlement& s, const JournalRecord& receipt) {
  const ActionClaim& c = s.claim;
  const std::string digest =
      settlement_digest(Traits::kSettlementOutcomeKey, c, s.outcome_field, receipt);
  auto insert = db_.cached(Traits::kInsertSettlement);
  insert->bind(1, c.stream.stream_key()).bind(2, c.action_id).bind(3, c.action_content_digest);
  insert->bind(4, c.claim_digest).bind(5, s.outcome_field).bind(6, receipt.event_id);
  insert->bind(7, receipt.event_content_digest).bind(8, receipt.record_digest).bind(9, digest);
  insert->run();
}

template class AuthorityTable<InstallAuthority>;
template class AuthorityTable<ActivationAuthority>;

void validate_guard_shape(const SettlementGuard& guard) {
  if (!is_trimmed(guard.action_id)) {
    throw InvalidArgument("guard action_id must be a non-empty trimmed string");
  }
  require_digest(guard.action_content_digest, "guard action_content_digest");
  require_digest(guard.execution_outcome_digest, "guard execution_outcome_digest");
  if (guard.mode == GuardMode::kExpired && guard.execution_outcome_digest) {
    throw InvalidArgument("expired actions cannot carry an execution outcome");
  }
  if (guard.mode != GuardMode::kExpired && !guard.execution_outcome_digest) {
    throw InvalidArgument("receipt guard requires an execution outcome digest");
  }
  if (guard.authority == engine::ExecutionAuthority::kActivation &&
      guard.mode == GuardMode::kFailed) {
    throw InvalidArgument("activation guards have no failed mode");
  }
}

}  // namespace ctx::store
