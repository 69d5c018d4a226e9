#include "host/store/authority_table.hpp"

#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/store/journal_table.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {

using engine::ActionClaim;
using engine::ActionKind;
using engine::ClaimRequest;
using engine::EngineStoreError;
using engine::EventKind;
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

// The fields a claim needs from a HostAction's canonical JSON text (`kind` is nullopt for a
// spelling outside kActionKindStrings).
struct ParsedAction {
  std::string action_id;
  std::optional<ActionKind> kind;
  Revision precondition_revision = 0;
  std::string expires_at;
  core::Timestamp expires{};
  std::string content_digest;
};

ParsedAction parse_action_text(const std::string& action_json);

// parse_action_text, remembered per process by the exact action bytes (a pure function of them;
// failures are never remembered). Bounded.
ParsedAction parse_action(const std::string& action_json) {
  static std::mutex mutex;
  static auto* parsed = new std::unordered_map<std::string, ParsedAction>();  // exit-safe
  {
    std::lock_guard lock(mutex);
    if (const auto it = parsed->find(action_json); it != parsed->end()) return it->second;
  }
  ParsedAction action = parse_action_text(action_json);
  std::lock_guard lock(mutex);
  if (parsed->size() >= 1024) parsed->clear();
  parsed->emplace(action_json, action);
  return action;
}

ParsedAction parse_action_text(const std::string& action_json) {
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
  parsed.kind = engine::find_enum<ActionKind>(kind->get_ref<const std::string&>());
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

// The reducer event inside a ReplayInput (spec §4): kind (nullopt when absent or not an event
// kind), payload and occurred_at.
struct ReceiptEvent {
  std::optional<EventKind> kind;
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
  receipt.kind = engine::find_enum<EventKind>(text(*event, "kind"));
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
                              const SettlementOutcome& outcome, const JournalRecord& receipt) {
  return core::canonical_digest(Json{{"action_content_digest", claim.action_content_digest},
                                     {"action_id", claim.action_id},
                                     {"claim_digest", claim.claim_digest},
                                     {outcome_key, settlement_outcome_text(outcome)},
                                     {"receipt_event_content_digest", receipt.event_content_digest},
                                     {"receipt_event_id", receipt.event_id},
                                     {"receipt_record_digest", receipt.record_digest},
                                     {"stream_key", claim.stream.stream_key()}});
}

}  // namespace

std::string settlement_outcome_text(const SettlementOutcome& outcome) {
  if (const auto* install = std::get_if<InstallOutcome>(&outcome)) {
    return std::string(engine::install_outcome_name(*install));
  }
  return std::get<std::string>(outcome);
}

// ---- Traits ----

// The error types one authority raises, by situation.
template <typename AlreadyClaimedT, typename ExpiredT, typename SettledT, typename OutcomeRequiredT,
          typename ClaimRequiredT, typename ConflictT>
struct AuthorityErrors {
  using AlreadyClaimed = AlreadyClaimedT;    // a second claim; a claimed action "expiring"
  using Expired = ExpiredT;                  // trusted now at/after expires_at
  using Settled = SettledT;                  // the claim already has its settlement
  using OutcomeRequired = OutcomeRequiredT;  // no claim for an outcome; no outcome for a receipt
  using ClaimRequired = ClaimRequiredT;      // a receipt for an unclaimed action
  using Conflict = ConflictT;                // binding, outcome or receipt disagree
};

// Everything else that tells the two authorities apart: names, wording (each message follows
// "<name> action '<id>"), behaviour flags and the digests of their rows.
struct AuthorityWords {
  const char* name;
  ActionKind action_kind;
  const char* settlement_outcome_key;  // the settlement digest's outcome field
  bool accepts_installed_by;           // a claim may name the installing action
  bool observation_must_precede_expiry;
  bool receipt_occurs_at_observation;  // the receipt's occurred_at is the outcome's observed_at
  const char* already_claimed;
  const char* claim_expired;
  const char* observation_expired;
  const char* settled;
  const char* outcome_without_claim;
  const char* receipt_without_claim;
  const char* receipt_without_outcome;
  std::string (*claim_digest)(const ActionClaim&);
  std::string (*outcome_digest)(const ExecutionOutcome&);
  SettlementOutcome (*settlement_outcome)(const ExecutionOutcome&);  // its settlement's outcome
  // The settlement outcome stored as `text`, or nullopt for text this authority cannot store.
  std::optional<SettlementOutcome> (*parse_settlement_outcome)(const std::string& text);
};

// The seven statements of one authority's tables. Claim rows read as 16 columns (the kind at
// 3) and outcome rows as 9 (the install outcome name at 4) for both authorities; an insert
// leaves the parameters of columns its table does not have unused.
#define CTX_AUTHORITY_STATEMENTS(prefix, kind, kind_column, kind_value, outcome, outcome_column,  \
                                 outcome_value, settlement_outcome)                              \
  static constexpr StaticSql kSelectClaim{                                                       \
      "SELECT stream_key, action_id, action_content_digest, " kind ", " CTX_CLAIM_TAIL           \
      " FROM engine_" prefix "_claims WHERE stream_key = ?1 AND action_id = ?2"};                \
  static constexpr StaticSql kInsertClaim{                                                       \
      "INSERT INTO engine_" prefix "_claims (stream_key, action_id, action_content_digest, "     \
      kind_column CTX_CLAIM_TAIL ") VALUES (?1, ?2, ?3, " kind_value CTX_CLAIM_VALUES};          \
  static constexpr StaticSql kSelectOutcome{                                                     \
      "SELECT action_id, action_content_digest, claim_digest, execution_binding_digest, "        \
      outcome ", " CTX_OUTCOME_TAIL " FROM engine_" prefix "_outcomes "                         \
      "WHERE stream_key = ?1 AND action_id = ?2"};                                               \
  static constexpr StaticSql kInsertOutcome{                                                     \
      "INSERT INTO engine_" prefix "_outcomes (stream_key, action_id, action_content_digest, "   \
      "claim_digest, execution_binding_digest, " outcome_column CTX_OUTCOME_TAIL                 \
      ") VALUES (?1, ?2, ?3, ?4, ?5, " outcome_value "?7, ?8, ?9, ?10)"};                        \
  static constexpr StaticSql kSelectSettlement{                                                  \
      "SELECT action_content_digest, claim_digest, " settlement_outcome CTX_SETTLEMENT_TAIL      \
      " FROM engine_" prefix "_claim_settlements WHERE stream_key = ?1 AND action_id = ?2"};     \
  static constexpr StaticSql kInsertSettlement{                                                  \
      "INSERT INTO engine_" prefix "_claim_settlements (stream_key, action_id, "                 \
      "action_content_digest, claim_digest, " settlement_outcome CTX_SETTLEMENT_TAIL             \
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"};                                          \
  static constexpr StaticSql kAllKeys{                                                           \
      "SELECT stream_key, action_id FROM engine_" prefix "_claims UNION SELECT stream_key, "     \
      "action_id FROM engine_" prefix "_outcomes UNION SELECT stream_key, action_id FROM "       \
      "engine_" prefix "_claim_settlements"}

#define CTX_CLAIM_TAIL                                                                         \
  "precondition_revision, action_json, issuing_record_digest, claimed_head_revision, "         \
  "claimed_head_record_digest, claimed_head_state_digest, action_expires_at, claimed_at, "     \
  "authorization_digest, execution_binding_json, execution_binding_digest, claim_digest"
#define CTX_CLAIM_VALUES "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
#define CTX_OUTCOME_TAIL \
  "observed_material_identity_digest, verification_digest, observed_at, outcome_digest"
#define CTX_SETTLEMENT_TAIL \
  ", receipt_event_id, receipt_event_content_digest, receipt_record_digest, settlement_digest"

struct InstallAuthority {
  CTX_AUTHORITY_STATEMENTS("install", "action_kind", "action_kind, ", "?4, ", "outcome",
                           "outcome, ", "?6, ", "outcome");
  using Errors =
      AuthorityErrors<engine::InstallActionAlreadyClaimed, engine::InstallActionClaimExpired,
                      engine::InstallActionClaimSettled, engine::InstallExecutionOutcomeRequired,
                      engine::InstallActionClaimRequired, engine::InstallExecutionOutcomeConflict>;
  static constexpr AuthorityWords kWords{
      .name = "install", .action_kind = ActionKind::kInstallCapability,
      .settlement_outcome_key = "outcome",
      .accepts_installed_by = false, .observation_must_precede_expiry = false,
      .receipt_occurs_at_observation = false, .already_claimed = "' has already been claimed",
      .claim_expired = "' expired before it was claimed", .observation_expired = "' expired",
      .settled = "' already has a terminal settlement",
      .outcome_without_claim = "' has no durable execution claim",
      .receipt_without_claim = "' must be claimed before receipt commit",
      .receipt_without_outcome = "' has no verified execution outcome",
      .claim_digest = &engine::install_claim_digest,
      .outcome_digest = &engine::install_outcome_digest,
      .settlement_outcome = [](const ExecutionOutcome& o) { return SettlementOutcome(*o.outcome); },
      .parse_settlement_outcome = [](const std::string& text) -> std::optional<SettlementOutcome> {
        if (const auto outcome = engine::find_enum<InstallOutcome>(text)) return *outcome;
        return std::nullopt;
      }};
};

struct ActivationAuthority {
  CTX_AUTHORITY_STATEMENTS("activation", "'ActivateCapability'", "", "", "NULL", "", "",
                           "outcome_digest");
  using Errors = AuthorityErrors<engine::ActivationActionAlreadyClaimed,
                                 engine::ActivationActionClaimExpired,
                                 engine::ActivationActionClaimSettled,
                                 engine::ActivationExecutionOutcomeRequired,
                                 engine::ActivationExecutionOutcomeRequired,
                                 engine::ActivationExecutionOutcomeConflict>;
  static constexpr AuthorityWords kWords{
      .name = "activation",
      .action_kind = ActionKind::kActivateCapability,
      .settlement_outcome_key = "outcome_digest",
      .accepts_installed_by = true,
      .observation_must_precede_expiry = true,
      .receipt_occurs_at_observation = true,
      .already_claimed = "' is already claimed",
      .claim_expired = "' expired before claim",
      .observation_expired = "' expired before observation",
      .settled = "' is already settled",
      .outcome_without_claim = "' has no durable claim",
      .receipt_without_claim = "' has no durable claim",
      .receipt_without_outcome = "' has no verified outcome",
      .claim_digest = &engine::activation_claim_digest,
      .outcome_digest = &engine::activation_outcome_digest,
      .settlement_outcome =
          [](const ExecutionOutcome& o) { return SettlementOutcome(o.outcome_digest); },
      .parse_settlement_outcome = [](const std::string& text) -> std::optional<SettlementOutcome> {
        return SettlementOutcome(text);  // a digest: checked against the outcome row
      }};
};

#undef CTX_AUTHORITY_STATEMENTS
#undef CTX_CLAIM_TAIL
#undef CTX_CLAIM_VALUES
#undef CTX_OUTCOME_TAIL
#undef CTX_SETTLEMENT_TAIL

// Raises `Error` with "<name> action '<id><words>".
template <typename Error, typename Traits>
[[noreturn]] void raise(const std::string& id, const char* words) {
  throw Error(std::string(Traits::kWords.name) + " action '" + id + words);
}

// Raises the authority's Conflict error: "<name> <what>".
template <typename Traits>
[[noreturn]] void conflict(const std::string& what) {
  throw typename Traits::Errors::Conflict(std::string(Traits::kWords.name) + " " + what);
}

// ---- Rows ----

// Claim rows: 0 (stream key), 3 (action kind), 4 and 7 (revisions) are read apart.
using C = ActionClaim;
constexpr TextColumns<C, 16> kClaimText = {
    nullptr, &C::action_id, &C::action_content_digest, nullptr, nullptr, &C::action_json,
    &C::issuing_record_digest, nullptr, &C::claimed_head_record_digest,
    &C::claimed_head_state_digest, &C::action_expires_at, &C::claimed_at,
    &C::authorization_digest, &C::execution_binding_json, &C::execution_binding_digest,
    &C::claim_digest};

// Outcome rows: 4 (install outcome) and 5 (nullable observed material) are read apart.
using O = ExecutionOutcome;
constexpr TextColumns<O, 9> kOutcomeText = {
    &O::action_id, &O::action_content_digest, &O::claim_digest, &O::execution_binding_digest,
    nullptr, nullptr, &O::verification_digest, &O::observed_at, &O::outcome_digest};

// The row `select` (keyed by ?1 stream_key, ?2 action_id) finds for the action, decoded.
template <typename Row>
std::optional<Row> find_row(Database& db, StaticSql select, const StreamId& stream,
                            std::string_view action_id,
                            Row (*decode)(const Statement&, const StreamId&)) {
  auto row = db.cached(select);
  row->bind(1, stream.stream_key()).bind(2, action_id);
  if (!row->step()) return std::nullopt;
  return decode(*row, stream);
}

ActionClaim decode_claim(const Statement& row, const StreamId& stream) {
  if (row.text(0) != stream.stream_key()) throw JournalCorruption("claim row has another stream");
  const std::optional<ActionKind> kind = engine::find_enum<ActionKind>(row.text(3));
  if (!kind) throw JournalCorruption("claim row has an unknown action kind");
  ActionClaim claim{stream, {}, {}, *kind, row.integer(4), {}, {}, row.integer(7), {}, {}, {}, {},
                    {}, {}, {}, {}};
  read_text_columns(row, kClaimText, claim);
  return claim;
}

ExecutionOutcome decode_outcome(const Statement& row, const StreamId& stream) {
  ExecutionOutcome outcome{stream, {}, {}, {}, {}, std::nullopt, row.optional_text(5), {}, {}, {}};
  read_text_columns(row, kOutcomeText, outcome);
  if (!row.is_null(4)) {
    outcome.outcome = engine::find_enum<InstallOutcome>(row.text(4));
    if (!outcome.outcome) throw JournalCorruption("install outcome has an unknown outcome");
  }
  return outcome;
}

template <typename Traits>
SettlementRow decode_settlement(const Statement& row, const StreamId&) {
  std::optional<SettlementOutcome> outcome = Traits::kWords.parse_settlement_outcome(row.text(2));
  if (!outcome) {
    throw JournalCorruption(std::string(Traits::kWords.name) +
                            " settlement has an unknown outcome");
  }
  return SettlementRow{row.text(0), row.text(1), std::move(*outcome), row.text(3),
                       row.text(4), row.text(5), row.text(6)};
}

// ---- Verification ----

template <typename Traits>
void AuthorityTable<Traits>::verify_claim(const ActionClaim& claim) {
  auto fail = [&](const std::string& what) {
    throw JournalCorruption(std::string(Traits::kWords.name) + " claim of '" + claim.action_id +
                            "': " + what);
  };
  if (claim.claim_digest != Traits::kWords.claim_digest(claim)) {
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
      action.expires_at != claim.action_expires_at || action.kind != Traits::kWords.action_kind ||
      claim.action_kind != Traits::kWords.action_kind) {
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
    throw JournalCorruption(std::string(Traits::kWords.name) + " outcome of '" + outcome.action_id +
                            "': " + what);
  };
  if (outcome.action_content_digest != claim.action_content_digest ||
      outcome.claim_digest != claim.claim_digest ||
      outcome.execution_binding_digest != claim.execution_binding_digest) {
    fail("outcome does not match its claim");
  }
  if (outcome.outcome_digest != Traits::kWords.outcome_digest(outcome)) {
    fail("outcome_digest does not match outcome content");
  }
  const bool applied =
      outcome.outcome.value_or(InstallOutcome::kApplied) == InstallOutcome::kApplied;
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
    throw JournalCorruption(std::string(Traits::kWords.name) + " settlement of '" +
                            claim.action_id + "': " + what);
  };
  if (!outcome) fail("settlement has no outcome");
  if (row.action_content_digest != claim.action_content_digest ||
      row.claim_digest != claim.claim_digest) {
    fail("settlement does not match its claim");
  }
  if (row.outcome != Traits::kWords.settlement_outcome(*outcome)) {
    fail("settlement does not match its outcome");
  }
  std::optional<JournalRecord> receipt = journal_.by_event_id(row.receipt_event_id);
  if (!receipt || receipt->stream != claim.stream ||
      receipt->record_digest != row.receipt_record_digest ||
      receipt->event_content_digest != row.receipt_event_content_digest) {
    fail("receipt record anchor is broken");
  }
  if (row.settlement_digest !=
      settlement_digest(Traits::kWords.settlement_outcome_key, claim, row.outcome, *receipt)) {
    fail("settlement_digest does not match content");
  }
}

template <typename Traits>
Authority AuthorityTable<Traits>::load(const StreamId& stream, std::string_view action_id) {
  Authority a;
  a.claim = find_row(db_, Traits::kSelectClaim, stream, action_id, &decode_claim);
  a.outcome = find_row(db_, Traits::kSelectOutcome, stream, action_id, &decode_outcome);
  a.settlement =
      find_row(db_, Traits::kSelectSettlement, stream, action_id, &decode_settlement<Traits>);
  if (!a.claim) {
    if (a.outcome || a.settlement) {
      throw JournalCorruption(std::string(Traits::kWords.name) +
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
  const std::string what = Traits::kWords.name;
  if (request.expected_revision < 1) throw InvalidArgument("expected_revision must be >= 1");
  require_digest(request.expected_head_record_digest, "expected_head_record_digest");
  require_digest(request.authorization_digest, "authorization_digest");
  require_digest(request.execution_binding_digest, "execution_binding_digest");
  require_digest(request.installed_by_action_content_digest, "installed_by_action_content_digest");
  if (!Traits::kWords.accepts_installed_by && request.installed_by_action_content_digest) {
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
  if (action.kind != Traits::kWords.action_kind) {
    throw InvalidArgument(what + " claim requires an exact " +
                          std::string(engine::to_string(Traits::kWords.action_kind)) + " action");
  }

  Authority existing = load(request.stream, action.action_id);
  if (existing.claim) {
    if (existing.claim->action_content_digest != action.content_digest) {
      throw JournalCorruption(what + " action '" + action.action_id +
                              "' is bound to different claimed content");
    }
    raise<typename Traits::Errors::AlreadyClaimed, Traits>(action.action_id,
                                                           Traits::kWords.already_claimed);
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
  if (now >= action.expires)
    raise<typename Traits::Errors::Expired, Traits>(action.action_id, Traits::kWords.claim_expired);
  if (before_insert) before_insert(now);
  ActionClaim claim{
      .stream = request.stream,
      .action_id = action.action_id,
      .action_content_digest = action.content_digest,
      .action_kind = Traits::kWords.action_kind,
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
  claim.claim_digest = Traits::kWords.claim_digest(claim);
  auto insert = db_.cached(Traits::kInsertClaim);
  insert->bind(1, claim.stream.stream_key()).bind(5, claim.precondition_revision);
  insert->bind(4, engine::to_string(claim.action_kind));  // unused by the activation table
  insert->bind(8, claim.claimed_head_revision);
  bind_text_columns(*insert, kClaimText, claim);
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
    raise<typename Traits::Errors::OutcomeRequired, Traits>(action.action_id,
                                                            Traits::kWords.outcome_without_claim);
  }
  if (a.claim->execution_binding_digest != facts.execution_binding_digest) {
    conflict<Traits>("outcome execution binding does not match the claim");
  }
  if (a.settlement)
    raise<typename Traits::Errors::Settled, Traits>(action.action_id, Traits::kWords.settled);
  const auto& expected = facts.expected_result_material_identity_digest;
  if (applied && expected && *observed != *expected) {
    conflict<Traits>("outcome does not match authorized result material");
  }
  if (a.outcome) {
    if (a.outcome->outcome == facts.outcome &&
        a.outcome->observed_material_identity_digest == observed &&
        a.outcome->verification_digest == facts.verification_digest) {
      return *a.outcome;  // identical retry
    }
    conflict<Traits>("action '" + action.action_id + "' already has a different outcome");
  }
  const core::Timestamp now = trusted_now();
  if (now < core::parse_rfc3339(a.claim->claimed_at)) {
    throw EngineStoreError("trusted utc clock moved before the " +
                           std::string(Traits::kWords.name) + " claim");
  }
  if (Traits::kWords.observation_must_precede_expiry && now >= action.expires) {
    raise<typename Traits::Errors::Expired, Traits>(action.action_id,
                                                    Traits::kWords.observation_expired);
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
  outcome.outcome_digest = Traits::kWords.outcome_digest(outcome);
  auto insert = db_.cached(Traits::kInsertOutcome);
  insert->bind(1, facts.stream.stream_key()).bind(2, outcome.action_id);
  insert->bind(3, outcome.action_content_digest).bind(4, outcome.claim_digest);
  insert->bind(5, outcome.execution_binding_digest);
  if (outcome.outcome)
    insert->bind(6, std::string_view(engine::install_outcome_name(*outcome.outcome)));
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
    if (a.claim)
      raise<typename Traits::Errors::AlreadyClaimed, Traits>(id, "' cannot expire as unclaimed");
    return std::nullopt;
  }
  if (a.settlement) raise<typename Traits::Errors::Settled, Traits>(id, Traits::kWords.settled);
  if (!a.claim)
    raise<typename Traits::Errors::ClaimRequired, Traits>(id, Traits::kWords.receipt_without_claim);
  if (!a.outcome)
    raise<typename Traits::Errors::OutcomeRequired, Traits>(id,
                                                            Traits::kWords.receipt_without_outcome);
  const bool applied_outcome =
      a.outcome->outcome.value_or(InstallOutcome::kApplied) == InstallOutcome::kApplied;
  const bool mode_matches = (guard.mode == GuardMode::kApplied) == applied_outcome;
  std::optional<ReceiptEvent> event = parse_receipt_event(receipt.replay_json);
  const EventKind receipt_kind =
      guard.mode == GuardMode::kApplied ? EventKind::kActionApplied : EventKind::kActionFailed;
  const bool receipt_matches = event && event->kind == receipt_kind && event->action_id == id &&
                               event->action_content_digest == guard.action_content_digest &&
                               (!Traits::kWords.receipt_occurs_at_observation ||
                                event->occurred_at == a.outcome->observed_at);
  if (a.claim->action_content_digest != guard.action_content_digest || !mode_matches ||
      a.outcome->outcome_digest != *guard.execution_outcome_digest || !receipt_matches) {
    conflict<Traits>("receipt does not match its verified execution outcome");
  }
  return PendingSettlement{*a.claim, Traits::kWords.settlement_outcome(*a.outcome)};
}

template <typename Traits>
void AuthorityTable<Traits>::settle(const PendingSettlement& s, const JournalRecord& receipt) {
  const ActionClaim& c = s.claim;
  const std::string digest =
      settlement_digest(Traits::kWords.settlement_outcome_key, c, s.outcome, receipt);
  auto insert = db_.cached(Traits::kInsertSettlement);
  insert->bind(1, c.stream.stream_key()).bind(2, c.action_id).bind(3, c.action_content_digest);
  insert->bind(4, c.claim_digest).bind(5, settlement_outcome_text(s.outcome));
  insert->bind(6, receipt.event_id);
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
